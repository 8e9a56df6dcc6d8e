#!/usr/bin/env node
// Every test pass `npm test` runs, in an order that fits CI's 2 cores:
//
//   1. the whole suite under Docker/runc (vitest), but for the slow passes below;
//   2. side by side, as they share nothing: the engine suites under Podman
//      (its own storage and service) and, one after the other, the host suites
//      on Node 24 and the offline base build (Docker, no registry);
//   3. the engine suites under Docker with runsc, after the offline base test
//      has put Docker's base image back as it was.
//
// The side pass's output is held and printed whole when it ends, so the log
// reads one pass at a time. Any failed pass fails the run; each says its time.
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const OFFLINE_BASE_SUITE = "test/box/offline-base.test.ts";

/** Runs a command; resolves with its exit status. `capture` holds its output for later. */
function pass(label, command, args, { env = {}, capture = false } = {}) {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: capture ? ["ignore", "pipe", "pipe"] : "inherit",
    });
    let output = "";
    if (capture) {
      child.stdout.on("data", (chunk) => (output += chunk));
      child.stderr.on("data", (chunk) => (output += chunk));
    }
    const finish = (status, error) => {
      const seconds = ((Date.now() - started) / 1000).toFixed(0);
      if (capture) process.stderr.write(`\n===== ${label} (held while it ran) =====\n${output}`);
      if (error) console.error(`test-passes: ${label}: ${error.message}`);
      console.error(`test-passes: ${label}: ${status === 0 ? "passed" : "FAILED"} in ${seconds} s`);
      resolve(status);
    };
    child.on("error", (error) => finish(1, error));
    child.on("close", (status) => finish(status ?? 1));
  });
}

async function inOrder(...steps) {
  let status = 0;
  for (const step of steps) if ((await step()) !== 0) status = 1;
  return status;
}

const statuses = [];
statuses.push(
  await pass("Docker (runc)", "npx", ["vitest", "run", "--exclude", OFFLINE_BASE_SUITE]),
);
statuses.push(
  ...(await Promise.all([
    pass("Podman", "node", ["scripts/test-engines.mjs"], { env: { ROSTER_ENGINES: "podman" } }),
    inOrder(
      () => pass("Node 24", "node", ["scripts/test-node24.mjs"], { capture: true }),
      () =>
        pass("the offline base", "npx", ["vitest", "run", OFFLINE_BASE_SUITE], { capture: true }),
    ),
  ])),
);
statuses.push(
  await pass("gVisor (runsc)", "node", ["scripts/test-engines.mjs"], {
    env: { ROSTER_ENGINES: "runsc" },
  }),
);
process.exit(statuses.every((status) => status === 0) ? 0 : 1);
