#!/usr/bin/env node
// The host-side suites where Node's version matters, run again on Node 24 (the
// host's floor is Node 22; users on a current distribution run 22 or 24).
//
// Node 24 is the one the box's offline base pins (runner/boundary/box/offline-base.ts),
// fetched from the npm registry and checked by scripts/host-node.mjs, the same
// one `npm ci` brings in for the host on a machine whose Node is older than 22.
// There `npm test` already runs every host suite on it (scripts/test-lanes.mjs
// starts itself again on it), so this pass would repeat the same Node: it says
// so and stops.
//
// Run: the host suites where Node's version matters (NODE24_SUITES in
// scripts/host-suites.mjs says which, and why DOCKER_HOST points at nothing). scripts/test-lanes.mjs runs this in its host
// lane, beside the engine suites.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { HostNodeError, pinnedNode, pinnedVersion, ROOT } from "./host-node.mjs";
import { hostSuites, NO_ENGINE, NODE24_SUITES } from "./host-suites.mjs";

const root = ROOT;
const SUITES = hostSuites(root, NODE24_SUITES);

function fail(message) {
  console.error(`test-node24: ${message}`);
  process.exit(1);
}

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: "inherit", ...options });
  if (result.error) fail(`${command}: ${result.error.message}`);
  return result.status ?? 1;
}

let version;
let binary;
try {
  version = pinnedVersion(root);
  if (process.version === `v${version}`) {
    console.error(
      `test-node24: not run: the host suites ran on Node ${version} already, the Node this pass would use`,
    );
    process.exit(0);
  }
  binary = pinnedNode({ root });
} catch (error) {
  if (!(error instanceof HostNodeError)) throw error;
  fail(error.message);
}
console.error(`test-node24: ${SUITES.join(", ")} on Node ${version}`);
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
