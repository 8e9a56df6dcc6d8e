#!/usr/bin/env node
// Every suite, in two lanes at once (package.json "test", after lint, type-check
// and the dist check):
//
//   engine lane  the suites that drive boxes, one file at a time (they share one
//                engine): vitest's global setup builds the box image first, then
//                scripts/test-engines.mjs runs the engine suites again under
//                Podman and under Docker/runsc. Its output streams as it comes.
//   host lane    the suites that need no engine (scripts/host-suites.mjs) on this
//                Node, then again on Node 24 (scripts/test-node24.mjs). Its output
//                is kept and printed whole once both lanes have ended.
//
// Why two lanes: CI's machine has 2 cores and the engine lane leaves about 40% of
// them idle (an image build waits on the Debian mirror and dpkg, a box test on
// the engine), while the host lane is one busy process. Measured side by side
// in bench/NOTES.md ("CI's time"). A lane that fails fails the command; the
// other lane still runs to its end, so one run says everything that broke.
import { spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { HOST_SUITES, NO_ENGINE } from "./host-suites.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const vitest = join(root, "node_modules/vitest/vitest.mjs");
const node = process.execPath;

/** The steps of a lane run one after another; `stopOnFailure` skips the rest after one fails. */
const LANES = {
  engine: {
    stopOnFailure: true,
    steps: [
      [node, [vitest, "run", ...HOST_SUITES.flatMap((suite) => ["--exclude", `${suite}/**`])]],
      [node, [join(root, "scripts/test-engines.mjs")]],
    ],
  },
  host: {
    stopOnFailure: false,
    env: { DOCKER_HOST: NO_ENGINE },
    steps: [
      [node, [vitest, "run", "--config", "vitest.host.config.ts", ...HOST_SUITES]],
      [node, [join(root, "scripts/test-node24.mjs")]],
    ],
  },
};

const running = new Set();
for (const signal of ["SIGINT", "SIGTERM"])
  process.on(signal, () => {
    // each step leads a process group of its own: the vitest workers and boxes' clients go too
    for (const child of running) {
      try {
        process.kill(-child.pid, signal);
      } catch {
        // already gone
      }
    }
    process.exit(130);
  });

function step([command, args], env, stdio) {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: root,
      env: { ...process.env, ...env },
      stdio,
      detached: true,
    });
    running.add(child);
    child.on("error", (error) => {
      running.delete(child);
      console.error(`test-lanes: ${command} ${args[0] ?? ""}: ${error.message}`);
      resolve(false);
    });
    child.on("exit", (code) => {
      running.delete(child);
      resolve(code === 0);
    });
  });
}

async function lane(name, stdio) {
  const { steps, env = {}, stopOnFailure } = LANES[name];
  const started = Date.now();
  let ok = true;
  for (const each of steps) {
    if (!ok && stopOnFailure) break;
    if (!(await step(each, env, stdio))) ok = false;
  }
  const seconds = Math.round((Date.now() - started) / 1000);
  console.error(`test-lanes: the ${name} lane ${ok ? "passed" : "FAILED"} in ${seconds} s`);
  return ok;
}

const logDir = mkdtempSync(join(tmpdir(), "roster-host-lane-"));
const logFile = join(logDir, "host-lane.log");
const log = openSync(logFile, "w");
console.error(
  `test-lanes: the host lane (${HOST_SUITES.join(", ")}, then on Node 24) runs beside this one; its output follows at the end`,
);
const [engineOk, hostOk] = await Promise.all([
  lane("engine", "inherit"),
  lane("host", ["ignore", log, log]),
]);
closeSync(log);
console.log(`\n──── the host lane's output ────\n`);
process.stdout.write(readFileSync(logFile));
rmSync(logDir, { recursive: true, force: true });
console.log(
  `\ntest-lanes: engine lane ${engineOk ? "passed" : "FAILED"}, host lane ${hostOk ? "passed" : "FAILED"}`,
);
process.exit(engineOk && hostOk ? 0 : 1);
