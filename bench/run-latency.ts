/**
 * What a governed run costs on top of the container itself, side by side in
 * one run: the floors (a bare `docker run … true`, and a hardened `docker run`
 * of pi against the scripted model), then `roster run` in a fresh root, warm,
 * with a running gateway (`roster gateway start`), handed to a running
 * server (`roster server start`, which runs the box itself), and handed to a
 * server that keeps a ready box (docs/ready-boxes.md):
 * time to the model's first request, time to process exit (and its ratio to
 * the paired floor run's own exit: the whole-process pair), the box's exit to
 * the process's, host CPU per run and the CLI's peak RSS (GNU time, children
 * included). Each roster run is paired with a run of pi's floor just before
 * it, and a ratio is the median of those pairs' own ratios: the machine's
 * drift between rows (pi's floor alone moved 827–1230 ms between runs) then
 * cancels out. `roster` is run by its own shebang, as a shell runs it. Needs
 * Docker and the box image.
 *   npx tsx bench/run-latency.ts [rounds]   (TELEMETRY=on: metrics and traces on in every deployment)
 */
import { execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { connectEngine } from "../runner/boundary/box/connect.ts";
import type { DockerEngine } from "../runner/boundary/box/docker-engine.ts";
import { BOX_IMAGE } from "../runner/boundary/box/layout.ts";
import { listRuns, readRecord } from "../runner/records/run-records/run-record.ts";
import { readReadyStatus } from "../runner/work/ready/server-pool.ts";
import { OtlpReceiver } from "../test/support/otlp-receiver.ts";
import { freePort, ModelServer, makeRosterRoot, ROSTER_BIN, type RosterRoot } from "./harness.ts";
import { piFloor } from "./pi-floor.ts";

const ROUNDS = Number(process.argv[2] ?? 5);

/**
 * TELEMETRY=on: every deployment serves /metrics and exports traces to a
 * local OTLP receiver (docs/telemetry.md), so the same rows can be read with
 * telemetry on and off, side by side.
 */
const receiver = process.env.TELEMETRY === "on" ? await OtlpReceiver.start() : undefined;
async function telemetry(extraOrg = ""): Promise<{ extraOrg?: string }> {
  const section = receiver
    ? `[telemetry]\nmetrics_listen = "127.0.0.1:${await freePort()}"\notlp_endpoint = "${receiver.url}"\n`
    : "";
  const org = `${extraOrg}${section}`;
  return org ? { extraOrg: org } : {};
}
const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const engine = await connectEngine();
const client = (engine as unknown as DockerEngine).client;
const model = await new ModelServer().start("0.0.0.0");

interface Sample {
  first: number;
  exit: number;
  /** The box's end (record final) to the process's exit. */
  tail?: number;
  /** pi's floor to its first model request in the run just before this one. */
  floorFirst?: number;
  /** pi's floor to its process's exit in that run: the whole-process pair. */
  floorExit?: number;
  cpu?: number;
  rssMb?: number;
}

/** Spawns a command, timing the model's first request and the exit; `time` adds CPU and RSS. */
async function sample(
  command: string[],
  env: NodeJS.ProcessEnv,
  timed: boolean,
): Promise<Sample & { stderr: string }> {
  const asked = model.requests.length;
  model.reset();
  model.play({ text: "ok" });
  const stats = join(tmpdir(), `roster-bench-time-${process.pid}`);
  const argv = timed ? ["/usr/bin/time", "-o", stats, "-f", "%U %S %M", ...command] : command;
  const started = performance.now();
  const child = spawn(argv[0] as string, argv.slice(1), {
    env: { ...process.env, ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  let first = 0;
  const watch = setInterval(() => {
    if (!first && model.requests.length > asked) first = performance.now() - started;
  }, 2);
  await new Promise((resolve) => child.once("exit", resolve));
  const exit = performance.now() - started;
  clearInterval(watch);
  const out: Sample & { stderr: string } = { first, exit, stderr };
  if (timed) {
    const [user, sys, rss] =
      readFileSync(stats, "utf8").trim().split("\n").at(-1)?.split(" ").map(Number) ?? [];
    out.cpu = (user ?? 0) + (sys ?? 0);
    out.rssMb = (rss ?? 0) / 1024;
  }
  return out;
}

// the hardened docker run of pi itself against the scripted model: what roster adds nothing to
const floorRun = piFloor(model.port);
const bare: Sample[] = [];
async function floorSample(): Promise<Sample> {
  const run = await sample(floorRun.argv(BOX_IMAGE), {}, false);
  bare.push(run);
  return run;
}

/** `rounds` roster runs, each after a run of pi's floor it is compared with. */
async function rosterSamples(deployment: RosterRoot, rounds: number): Promise<Sample[]> {
  const samples: Sample[] = [];
  for (let i = 0; i < rounds; i++) {
    const { first: floorFirst, exit: floorExit } = await floorSample();
    const wall = Date.now();
    const run = await sample(
      [ROSTER_BIN, "run", "elf", "hi"],
      { ROSTER_ROOT: deployment.root },
      true,
    );
    const exitedAt = wall + run.exit;
    const latest = listRuns(deployment.paths.state, "elf")[0];
    const ended = latest ? readRecord(latest.dir)?.ended_at : undefined;
    samples.push({
      ...run,
      tail: ended ? exitedAt - Date.parse(ended) : Number.NaN,
      floorFirst,
      floorExit,
    });
  }
  return samples;
}

const floors: number[] = [];
for (let i = 0; i < ROUNDS; i++) {
  const started = performance.now();
  execFileSync("docker", ["run", "--rm", BOX_IMAGE, "true"]);
  floors.push(performance.now() - started);
}

// pi's floor warmed up once; its later runs are each paired with a roster run
await floorSample();
bare.length = 0;

const fresh = await makeRosterRoot(model.baseUrl("127.0.0.1"), await telemetry());
let cold: Sample[];
let warm: Sample[];
try {
  cold = await rosterSamples(fresh, 1);
  warm = await rosterSamples(fresh, ROUNDS);
} finally {
  await fresh.cleanup();
}

const held = await makeRosterRoot(model.baseUrl("127.0.0.1"), await telemetry());
let withGateway: Sample[];
const gateway = spawn(ROSTER_BIN, ["gateway", "start"], {
  env: { ...process.env, ROSTER_ROOT: held.root },
  stdio: "ignore",
});
try {
  for (let i = 0; i < 100; i++) {
    try {
      readFileSync(join(held.paths.state, "gateway.json"));
      break;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  await rosterSamples(held, 1); // first run in a root creates the CA
  withGateway = await rosterSamples(held, ROUNDS);
} finally {
  gateway.kill("SIGTERM");
  await new Promise((resolve) => gateway.once("exit", resolve));
  await held.cleanup();
}

/**
 * The same with a server running: `roster run` hands the run over. With
 * `ready`, the server keeps a ready box ([server] ready_boxes = 1), and each
 * round waits until one is ready, so every run takes one; the memory an idle
 * ready box holds is the last one seen.
 */
async function servedSamples(ready: boolean): Promise<{ samples: Sample[]; idleMiB?: number }> {
  const served = await makeRosterRoot(
    model.baseUrl("127.0.0.1"),
    await telemetry(ready ? "[server]\nready_boxes = 1\nready_idle_secs = 600\n" : ""),
  );
  const server = spawn(ROSTER_BIN, ["server", "start", "--no-listen"], {
    env: { ...process.env, ROSTER_ROOT: served.root },
    stdio: "ignore",
  });
  try {
    for (let i = 0; i < 200; i++) {
      try {
        readFileSync(join(served.paths.state, "server.sock"));
      } catch (error) {
        // a socket can't be read as a file: that error means it is there
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") break;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await rosterSamples(served, 1);
    const samples: Sample[] = [];
    let idleMiB: number | undefined;
    for (let i = 0; i < ROUNDS; i++) {
      for (let wait = 0; ready && wait < 600; wait++) {
        const [box] = readReadyStatus(served.paths);
        if (box) {
          if (box.memory_bytes !== undefined) idleMiB = box.memory_bytes / 1024 / 1024;
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      samples.push(...(await rosterSamples(served, 1)));
    }
    return { samples, ...(idleMiB !== undefined ? { idleMiB } : {}) };
  } finally {
    server.kill("SIGTERM");
    await new Promise((resolve) => server.once("exit", resolve));
    await served.cleanup();
  }
}
const handed = (await servedSamples(false)).samples;
const readied = await servedSamples(true);

floorRun.cleanup();
await model.stop();
const spans = receiver?.spans.length;
await receiver?.stop();

const floor = median(floors);
const row = (label: string, samples: Sample[]) => {
  const first = median(samples.map((s) => s.first));
  const ratio = median(samples.map((s) => s.first / (s.floorFirst ?? s.first)));
  const exit = median(samples.map((s) => s.exit));
  const exitRatio = median(samples.map((s) => s.exit / (s.floorExit ?? s.exit)));
  const tail = median(samples.map((s) => s.tail ?? Number.NaN));
  const cpu = median(samples.map((s) => s.cpu ?? Number.NaN));
  const rss = Math.max(...samples.map((s) => s.rssMb ?? 0));
  console.log(
    `| ${label} | ${first.toFixed(0)} | ${ratio.toFixed(2)}x | ${exit.toFixed(0)} | ${exitRatio.toFixed(2)}x | ${Number.isNaN(tail) ? "-" : tail.toFixed(0)} | ${Number.isNaN(cpu) ? "-" : cpu.toFixed(2)} | ${rss ? rss.toFixed(0) : "-"} |`,
  );
};
console.log(
  `Docker ${(await client.version()).Version}, Node ${process.version}, medians of ${ROUNDS}; each roster run paired with a run of pi's floor just before it (${bare.length} floor runs)${receiver ? `; telemetry on (metrics served, ${spans} spans received)` : ""}\n`,
);
console.log(
  "| run | to first model request ms | vs pi floor (median of the pairs' ratios) | to exit ms | whole process vs pi floor (pairs) | record final → exit ms | host CPU s | peak RSS MB |",
);
console.log("| --- | --- | --- | --- | --- | --- | --- | --- |");
console.log(
  `| floor: docker run --rm ${BOX_IMAGE} true | - | - | ${floor.toFixed(0)} | - | - | - | - |`,
);
row("floor: hardened docker run of pi -p", bare);
row("roster run, fresh root (first run)", cold);
row("roster run, warm", warm);
row("roster run, gateway already running", withGateway);
row("roster run, handed to a running server", handed);
row("roster run, handed to a server with a ready box", readied.samples);
console.log(
  `\nan idle ready box holds ${readied.idleMiB === undefined ? "(not measured)" : `${readied.idleMiB.toFixed(0)} MiB`}`,
);
