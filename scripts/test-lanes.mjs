#!/usr/bin/env node
// Every check and suite `npm test` runs (package.json "test"), and the inner
// loop's subset (`npm run test:fast`, with --fast):
//
//   preflight    lint, the type-check and the dist check, one after another;
//                a failure stops here (there is no point building a box image
//                for code that does not compile).
//   engine lane  the suites that drive boxes under Docker: vitest's global setup
//                makes the box image current first; the suites that restart the
//                engine run alone (FIRST_SUITES), then two files at a time but
//                for those that must run alone, which follow one at a time
//                (SOLO_SUITES; scripts/engine-suites.mjs says which and why). Its
//                output streams as it comes.
//   host lane    the suites that need no engine (scripts/host-suites.mjs) on this
//                Node, then the ones where Node's version matters again on Node
//                24 (scripts/test-node24.mjs; not when this Node is that one),
//                from when the box image is ready
//                (or the engine lane ended without one); then, once the engine's
//                restart is over, scripts/test-engines.mjs runs the cases that
//                depend on the engine or the box's runtime again under Podman and
//                under Docker/runsc. Its output is kept and printed whole once
//                both lanes have ended.
//
// --fast: the preflight and the host suites on this Node; no engine, no image,
// no Node 24 (a few minutes: the inner loop). The full command is what CI runs.
//
// "This Node" is a supported one: started on a Node older than package.json's
// "engines" allows (a machine with Node 20, as CI's), the command runs itself
// again on the Node `npm ci` brought in (scripts/host-node.mjs; fetched here if
// it is missing), that Node's folder first on PATH, so vitest, every roster
// command a test starts and every step below run on it. Its exit code is the
// command's. --which-node says which Node the lanes would run on, and stops.
//
// Why two lanes: CI's machine has 2 cores, and a box test leaves part of them
// idle (it waits on the engine), while the host lane is mostly one busy process.
// The image build leaves little: run beside it, the host lane slowed it by half.
// Measured in bench/NOTES.md ("The suite in 25 minutes"). A lane that fails
// fails the command; every step still runs to its end, so one run says
// everything that broke.
// Every pass records each file's time (test/support/timing-reporter.ts); the
// command ends with what the run cost (scripts/test-timings.mjs).
import { spawn } from "node:child_process";
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { checkedSuites, FIRST_SUITES, SOLO_SUITES } from "./engine-suites.mjs";
import { HostNodeError, pinnedVersion, supportedNodeFor } from "./host-node.mjs";
import { excludeHostSuites, hostSuites, NO_ENGINE } from "./host-suites.mjs";
import { readPasses, render, summarise, TIMINGS_DIR } from "./test-timings.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

let supported;
try {
  supported = supportedNodeFor({ root });
} catch (error) {
  if (!(error instanceof HostNodeError)) throw error;
  console.error(`test-lanes: ${error.message}`);
  process.exit(1);
}
if (supported) {
  console.error(
    `test-lanes: this machine's Node ${process.version} is older than roster supports: running on ${supported}`,
  );
  const again = spawn(supported, process.argv.slice(1), {
    stdio: "inherit",
    env: { ...process.env, PATH: `${dirname(supported)}:${process.env.PATH ?? ""}` },
  });
  for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => again.kill(signal));
  again.on("error", (error) => {
    console.error(`test-lanes: ${supported}: ${error.message}`);
    process.exit(1);
  });
  const [code, signal] = await new Promise((resolve) =>
    again.on("exit", (...ended) => resolve(ended)),
  );
  process.exit(code ?? (signal === "SIGINT" ? 130 : 1));
}
if (process.argv.includes("--which-node")) {
  console.log(`test-lanes: the lanes run on Node ${process.version} (${process.execPath})`);
  process.exit(0);
}

const vitest = join(root, "node_modules/vitest/vitest.mjs");
const node = process.execPath;
const fast = process.argv.includes("--fast");
const suites = hostSuites(root);
const first = checkedSuites(root, FIRST_SUITES);
const solo = checkedSuites(root, SOLO_SUITES);
/** Engine suites at once in the Docker pass (ROSTER_TEST_DOCKER_WORKERS; the solo ones run alone after). */
const DOCKER_WORKERS = Number(process.env.ROSTER_TEST_DOCKER_WORKERS ?? "2") || 2;

const PREFLIGHT = [
  [node, [join(root, "node_modules/@biomejs/biome/bin/biome"), "check", "."]],
  [node, [join(root, "node_modules/typescript/bin/tsc"), "--noEmit"]],
  [node, [join(root, "scripts/build-runner.mjs"), "--check"]],
];
const HOST_PASS = [
  node,
  [vitest, "run", "--config", "vitest.host.config.ts", ...suites],
  { ROSTER_TEST_PASS: "host" },
];

/**
 * The steps of a lane run one after another, each to its end (one run says
 * everything that broke); a step may wait for a mark another lane leaves.
 */
const LANES = {
  engine: {
    steps: [
      // first and alone: it restarts the engine, which the matrix passes then wait for
      [node, [vitest, "run", ...first], { ROSTER_TEST_PASS: "docker-first" }],
      { mark: "engine-steady" },
      [
        node,
        [
          vitest,
          "run",
          ...excludeHostSuites(),
          ...[...first, ...solo].flatMap((suite) => ["--exclude", suite]),
          "--fileParallelism",
          `--maxWorkers=${DOCKER_WORKERS}`,
        ],
        { ROSTER_TEST_PASS: "docker" },
      ],
      [node, [vitest, "run", ...solo], { ROSTER_TEST_PASS: "docker-solo" }],
    ],
  },
  host: {
    steps: [
      HOST_PASS,
      [node, [join(root, "scripts/test-node24.mjs")]],
      // the engine matrix (Podman, runsc) beside the Docker pass's solo suites: once
      // the engine is steady (its restart is over), on an outside host of its own
      { waitFor: "engine-steady" },
      // the host lane's DOCKER_HOST points at nothing; the matrix needs the engine back
      [node, [join(root, "scripts/test-engines.mjs")], { DOCKER_HOST: process.env.DOCKER_HOST }],
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
  // a step's own variable left undefined is unset for it, not inherited from its lane
  const merged = { ...process.env, ...env, ...own };
  for (const [key, value] of Object.entries(merged)) if (value === undefined) delete merged[key];
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: root,
      env: merged,
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
  const { steps } = LANES[name];
  const started = Date.now();
  let ok = true;
  for (const each of steps) {
    if ("mark" in each) writeFileSync(join(logDir, each.mark), "");
    else if ("waitFor" in each)
      while (!existsSync(join(logDir, each.waitFor)) && !engineEnded)
        await new Promise((resolve) => setTimeout(resolve, 500));
    else if (!(await step(each, env, stdio))) ok = false;
  }
  const seconds = Math.round((Date.now() - started) / 1000);
  console.error(`test-lanes: the ${name} lane ${ok ? "passed" : "FAILED"} in ${seconds} s`);
  return ok;
}

const began = Date.now();
const seconds = () => Math.round((Date.now() - began) / 1000);
// this run's timings only: a pass that did not run this time leaves no stale file
rmSync(TIMINGS_DIR, { recursive: true, force: true });

for (const each of PREFLIGHT)
  if (!(await step(each, {}, "inherit"))) {
    console.error(`test-lanes: FAILED in the preflight (${each[1][0]}), after ${seconds()} s`);
    process.exit(1);
  }
console.error(`test-lanes: lint, types and the compiled runner are clean (${seconds()} s)`);

if (fast) {
  const ok = await step(HOST_PASS, { DOCKER_HOST: NO_ENGINE }, "inherit");
  console.log(render(summarise(readPasses()), seconds()));
  console.log(`\ntest-lanes: the fast pass ${ok ? "passed" : "FAILED"}`);
  process.exit(ok ? 0 : 1);
}

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
  const again = process.version === `v${pinnedVersion(root)}` ? "" : ", then some on Node 24";
  console.error(
    `test-lanes: the host lane (${suites.length} suites that need no engine, on Node ${process.version}${again}) starts beside this one; its output follows at the end`,
  );
  return lane("host", ["ignore", log, log], { DOCKER_HOST: NO_ENGINE });
})();
const [engineOk, hostOk] = await Promise.all([engine, host]);
closeSync(log);
console.log(`\n──── the host lane's output ────\n`);
process.stdout.write(readFileSync(logFile));
rmSync(logDir, { recursive: true, force: true });
console.log(render(summarise(readPasses()), seconds()));
console.log(
  `\ntest-lanes: engine lane ${engineOk ? "passed" : "FAILED"}, host lane ${hostOk ? "passed" : "FAILED"}`,
);
process.exit(engineOk && hostOk ? 0 : 1);
