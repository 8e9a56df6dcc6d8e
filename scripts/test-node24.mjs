#!/usr/bin/env node
// The host-side suites where Node's version matters, run again on Node 24 (the host is
// developed on Node 20; users on a current distribution run 22 or 24).
//
// Node 24 comes from the npm registry, the way the offline base gets it
// (runner/boundary/box/offline-base.ts): `npm pack` of the package that ships the
// binary (node-linux-<arch>, the one the `node` package installs), at the
// version that file pins, unpacked into .cache/ (gitignored) and reused.
// Nothing is downloaded from anywhere but the registry npm is configured for.
//
// Run: the host suites where Node's version matters (NODE24_SUITES in
// scripts/host-suites.mjs says which, and why DOCKER_HOST points at nothing). scripts/test-lanes.mjs runs this in its host
// lane, beside the engine suites.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { hostSuites, NO_ENGINE, NODE24_SUITES } from "./host-suites.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const SUITES = hostSuites(root, NODE24_SUITES);

function fail(message) {
  console.error(`test-node24: ${message}`);
  process.exit(1);
}

function pinnedVersion() {
  const source = join(root, "runner/boundary/box/offline-base.ts");
  const pin = /export const NODE_PACKAGE_VERSION = "(24\.\d+\.\d+)";/.exec(
    readFileSync(source, "utf8"),
  );
  if (!pin) fail(`no Node 24 pin (NODE_PACKAGE_VERSION = "24.x.y") in ${source}`);
  return pin[1];
}

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: "inherit", ...options });
  if (result.error) fail(`${command}: ${result.error.message}`);
  return result.status ?? 1;
}

/** The unpacked Node 24 binary, fetched once into .cache/. */
function node24() {
  const version = pinnedVersion();
  const arch = process.arch === "arm64" ? "arm64" : "x64";
  if (process.platform !== "linux")
    fail(`the node-linux-* packages are for Linux, not ${process.platform}`);
  const dir = join(root, ".cache", `node-linux-${arch}-${version}`);
  const binary = join(dir, "package", "bin", "node");
  if (!existsSync(binary)) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const spec = `node-linux-${arch}@${version}`;
    console.error(`test-node24: fetching ${spec} from the npm registry`);
    const pack = spawnSync("npm", ["pack", spec, "--silent", "--pack-destination", dir], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
    });
    const tarball = pack.stdout?.trim().split("\n").at(-1);
    if (pack.status !== 0 || !tarball) fail(`npm pack ${spec} failed`);
    if (run("tar", ["-xzf", join(dir, tarball), "-C", dir]) !== 0)
      fail(`unpacking ${tarball} failed`);
    rmSync(join(dir, tarball), { force: true });
    if (!existsSync(binary)) fail(`${spec} has no bin/node`);
  }
  const answer = spawnSync(binary, ["--version"], { encoding: "utf8" });
  if (answer.stdout?.trim() !== `v${version}`)
    fail(
      `${binary} answered ${JSON.stringify(answer.stdout ?? answer.error?.message)}, not v${version}`,
    );
  return binary;
}

const binary = node24();
console.error(`test-node24: ${SUITES.join(", ")} on Node ${pinnedVersion()}`);
const status = run(
  binary,
  [
    join(root, "node_modules/vitest/vitest.mjs"),
    "run",
    "--config",
    "vitest.host.config.ts",
    ...SUITES,
  ],
  {
    cwd: root,
    env: {
      ...process.env,
      // every `node` a test starts (by name or as process.execPath) is Node 24
      PATH: `${dirname(binary)}:${process.env.PATH ?? ""}`,
      DOCKER_HOST: NO_ENGINE,
      ROSTER_TEST_PASS: "host-node24",
    },
  },
);
process.exit(status);
