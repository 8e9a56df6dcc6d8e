#!/usr/bin/env node
// Compiles the host runner (runner/, TypeScript) into dist/ with esbuild, so the
// `roster` command starts without transpiling anything. Run by `npm ci` and
// `npm install` (prepare) and by `npm run build`. With --check it builds in
// memory and fails when dist/ differs: `npm test` runs that, so stale compiled
// output never passes.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const check = args.includes("--check");
/** dist/'s list of the sources it was built from (bin/roster.mjs reads it). */
const SOURCES_MANIFEST = "sources.json";

// --outdir <dir>: build or check elsewhere than dist/ (the staleness test does)
const at = args.indexOf("--outdir");
const outdir = at >= 0 && args[at + 1] ? resolve(args[at + 1]) : join(root, "dist");

// Dependencies load from node_modules as they are, except these: each is pure
// ESM spread over many small files, and resolving and loading those files one
// by one cost the CLI ~0.2 s at every start (typebox alone ~0.15 s); bundled
// into a chunk they load in a few milliseconds. Only the command that uses
// them pays even that, since chunks stay lazy.
const BUNDLED = [
  "@sinclair/typebox",
  "commander",
  "smol-toml",
  "dockerode",
  "docker-modem",
  "@peculiar/x509",
  "reflect-metadata",
];
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const external = Object.keys({ ...manifest.dependencies, ...manifest.devDependencies })
  .filter((name) => !BUNDLED.includes(name))
  .flatMap((name) => [name, `${name}/*`]);

// Bundling dockerode also lets two of its parts load on first use instead of
// with it: the buildkit session (gRPC and protobuf, ~150 ms to load) and the
// ssh transport (ssh2, ~60 ms). Roster builds with the classic builder and
// talks to a local socket, so a run never loads either; anyone who does use
// them gets the real modules, required from node_modules when first called.
const LAZY = {
  "dockerode/lib/session": /^\.\/session$/,
  "docker-modem/lib/ssh": /^\.\/ssh$/,
};
const lazyParts = {
  name: "lazy-docker-parts",
  setup(build) {
    for (const [target, filter] of Object.entries(LAZY)) {
      const owner = `/node_modules/${target.split("/")[0]}/lib/`;
      build.onResolve({ filter }, (args) =>
        args.importer.includes(owner) ? { path: target, namespace: "lazy" } : undefined,
      );
    }
    // the real module, left to node_modules
    build.onResolve({ filter: /\.js$/, namespace: "lazy" }, (args) => ({
      path: args.path,
      external: true,
    }));
    build.onLoad({ filter: /.*/, namespace: "lazy" }, (args) => ({
      contents: `module.exports = function () { return require(${JSON.stringify(`${args.path}.js`)}).apply(this, arguments); };`,
      loader: "js",
    }));
  },
};

// An ES import of node:http builds the module's namespace, and that reads every
// export, its lazy WebSocket, CloseEvent and MessageEvent getters too: those
// load Node's bundled undici, ~50 ms at every start of every roster process
// (measured on the command line's run path). Taken through require instead,
// the module is what it is to CommonJS and its getters stay unread until used.
const REQUIRED_BUILTINS = /^(node:)?https?$/;
const requiredBuiltins = {
  name: "required-builtins",
  setup(build) {
    build.onResolve({ filter: REQUIRED_BUILTINS }, (args) =>
      // the require in the module below is Node's own
      args.namespace === "required-builtin"
        ? { path: args.path, external: true }
        : { path: args.path.replace(/^node:/, ""), namespace: "required-builtin" },
    );
    build.onLoad({ filter: /.*/, namespace: "required-builtin" }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(`node:${args.path}`)});`,
      loader: "js",
    }));
  },
};

const result = await build({
  absWorkingDir: root,
  // handed: `roster run` given to a running server, without the command tree (bin/roster.mjs)
  entryPoints: { roster: "runner/cli/main.ts", handed: "runner/cli/handed-run.ts" },
  bundle: true,
  // lazy imports stay lazy: a command loads only what it uses
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node22",
  external,
  // its "main" is CommonJS, whose chunk would export only a default; the ES build has names
  alias: { "@peculiar/x509": "./node_modules/@peculiar/x509/build/x509.es.js" },
  plugins: [lazyParts, requiredBuiltins],
  // commander is CommonJS: its require("node:events") needs a real require in an ES module
  banner: {
    js: 'import { createRequire as __rosterRequire } from "node:module"; const require = __rosterRequire(import.meta.url);',
  },
  outdir,
  // flat chunks: runner/ground/version.ts finds the checkout by walking up from wherever it lands
  chunkNames: "[name]-[hash]",
  write: false,
  metafile: true,
  logLevel: "warning",
});

const built = new Map(result.outputFiles.map((file) => [relative(outdir, file.path), file.text]));
// the runner's sources this build is made of: bin/roster.mjs stats just these to tell
// whether dist/ is current (a source added since is read only through one changed since)
const sources = Object.keys(result.metafile.inputs)
  .filter((input) => input.startsWith("runner/"))
  .sort();
built.set(SOURCES_MANIFEST, `${JSON.stringify(sources, null, 1)}\n`);

function existing(dir, prefix = "") {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? existing(join(dir, entry.name), `${prefix}${entry.name}/`)
      : [`${prefix}${entry.name}`],
  );
}

if (check) {
  const present = existing(outdir);
  const stale = [
    ...[...built]
      .filter(([name, text]) => {
        const file = join(outdir, name);
        return !existsSync(file) || readFileSync(file, "utf8") !== text;
      })
      .map(([name]) => name),
    ...present.filter((name) => !built.has(name)),
  ];
  if (stale.length) {
    console.error(
      `${relative(root, outdir) || outdir} is stale (${stale.slice(0, 3).join(", ")}${stale.length > 3 ? ", …" : ""}): run npm run build`,
    );
    process.exit(1);
  }
  console.log(`${relative(root, outdir)} matches runner/ (${built.size} files)`);
} else {
  rmSync(outdir, { recursive: true, force: true });
  for (const [name, text] of built) {
    mkdirSync(dirname(join(outdir, name)), { recursive: true });
    writeFileSync(join(outdir, name), text);
  }
  console.log(`built ${relative(root, outdir)} (${built.size} files)`);
}
