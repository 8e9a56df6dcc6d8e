#!/usr/bin/env node
// Every suite, in two lanes at once (package.json "test", after lint, type-check
// and the dist check):
//
//   engine lane  the suites that drive boxes, one file at a time (they share one
//                engine): vitest's global setup builds the box image first, then
//                scripts/test-engines.mjs runs the engine suites again under
//                Podman and under Docker/runsc. Its output streams as it comes.
//   host lane    the suites that need no engine (scripts/host-suites.mjs) on this
//                Node, then again on Node 24 (scripts/test-node24.mjs), from when
//                the box image is ready (or the engine lane ended without one).
//                Its output is kept and printed whole once both lanes have ended.
//
// Why: CI's machine has 2 cores, and a box test leaves about 40% of them idle
// (it waits on the engine), while the host lane is mostly one busy process. The
// image build leaves little: run beside it, the host lane slowed it by half.
// Measured in bench/NOTES.md ("CI's time"). A lane that fails fails the command;
// the other lane still runs to its end, so one run says everything that broke.
import { spawn } from "node:child_process";
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { excludeHostSuites, hostSuites, NO_ENGINE } from "./host-suites.mjs";
import { readPasses, render, summarise, TIMINGS_DIR } from "./test-timings.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const vitest = join(root, "node_modules/vitest/vitest.mjs");
const node = process.execPath;
const suites = hostSuites(root);

/** The steps of a lane run one after another; `stopOnFailure` skips the rest after one fails. */
const LANES = {
  engine: {
    stopOnFailure: true,
    steps: [
      [node, [vitest, "run", ...excludeHostSuites()], { ROSTER_TEST_PASS: "docker" }],
      [node, [join(root, "scripts/test-engines.mjs")]],
    ],
  },
  host: {
    stopOnFailure: false,
    steps: [
      [
        node,
        [vitest, "run", "--config", "vitest.host.config.ts", ...suites],
        { ROSTER_TEST_PASS: "host" },
      ],
      [node, [join(root, "scripts/test-node24.mjs")], { ROSTER_TEST_PASS: "host-node24" }],
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

function step([command, args, own = {}], env, stdio) {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: root,
      env: { ...process.env, ...env, ...own },
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

async function lane(name, stdio, env = {}) {
  const { steps, stopOnFailure } = LANES[name];
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

const began = Date.now();
// this run's timings only: a pass that did not run this time leaves no stale file
rmSync(TIMINGS_DIR, { recursive: true, force: true });
const logDir = mkdtempSync(join(tmpdir(), "roster-host-lane-"));
const logFile = join(logDir, "host-lane.log");
const imageReady = join(logDir, "image-ready");
const log = openSync(logFile, "w");
let engineEnded = false;
const engine = lane("engine", "inherit", { ROSTER_TEST_IMAGE_READY: imageReady }).then((ok) => {
  engineEnded = true;
  return ok;
});
const host = (async () => {
  while (!existsSync(imageReady) && !engineEnded)
    await new Promise((resolve) => setTimeout(resolve, 1000));
  console.error(
    `test-lanes: the host lane (${suites.length} suites that need no engine, on this Node, then on Node 24) starts beside this one; its output follows at the end`,
  );
  return lane("host", ["ignore", log, log], { DOCKER_HOST: NO_ENGINE });
})();
const [engineOk, hostOk] = await Promise.all([engine, host]);
closeSync(log);
console.log(`\n──── the host lane's output ────\n`);
process.stdout.write(readFileSync(logFile));
rmSync(logDir, { recursive: true, force: true });
console.log(render(summarise(readPasses()), (Date.now() - began) / 1000));
console.log(
  `\ntest-lanes: engine lane ${engineOk ? "passed" : "FAILED"}, host lane ${hostOk ? "passed" : "FAILED"}`,
);
process.exit(engineOk && hostOk ? 0 : 1);
