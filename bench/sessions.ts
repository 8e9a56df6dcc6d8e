/**
 * A warm chat session's turn against a cold one-shot run, side by side, with
 * the same standalone gateway serving both: the cold run is `roster run` as a
 * child process, timed from spawn to the scripted model receiving its request;
 * the warm turn is the session router in this process, timed from `deliver()`
 * to the model's request, and to the prompt line reaching the box's stdin (the
 * host's own part). Then the memory of one idle session (its box, and what it
 * adds to the process holding it), and the idle RSS of the daemon and of the
 * gateway alone. Needs Docker and the box image.
 *   npx tsx bench/sessions.ts
 */
import { type ChildProcess, execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type Docker from "dockerode";
import { connectEngine } from "../runner/boundary/box/connect.ts";
import type { DockerEngine } from "../runner/boundary/box/docker-engine.ts";
import { BOX_IMAGE } from "../runner/boundary/box/layout.ts";
import { runningGateway } from "../runner/boundary/gateway/process/health.ts";
import { ensureChannel } from "../runner/records/channels/store.ts";
import { termChannelId } from "../runner/services/chat/terminal/ids.ts";
import { type Inbound, SessionRouter } from "../runner/work/sessions/router.ts";
import { Session } from "../runner/work/sessions/session.ts";
import { ModelServer, makeRosterRoot, type RecordedRequest } from "./harness.ts";

const COLD_RUNS = 10;
const WARM_TURNS = 30;
/** Idle-RSS samples per process kind, alternating, so drift hits both alike. */
const RSS_SAMPLES = 3;
const MiB = 1024 * 1024;
/** Long enough that no session in this bench ends on its own quiet spell. */
const IDLE_MS = 600_000;

// RSS growth is read after a full collection, so garbage from earlier work is not counted as a session's
setFlagsFromString("--expose-gc");
const collect: () => void = runInNewContext("gc");

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const quantile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;
};
const ms = (value: number) => value.toFixed(value < 100 ? 1 : 0);
// a growth within rounding of zero prints as 0.0, not -0.0
const mib = (bytes: number) => (Math.abs(bytes) < 0.05 * MiB ? 0 : bytes / MiB).toFixed(1);
// two significant digits: the warm rows are thousandths of the cold one
const ratio = (value: number) => `${value >= 0.1 ? value.toFixed(2) : value.toPrecision(2)}x`;

function vmRss(pid: number | "self"): number {
  const kb = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return Number(kb ?? 0) * 1024;
}

/** The host process after a full collection: its RSS, and what the JS heap and its buffers hold. */
function hostMemory(): { rss: number; heap: number } {
  collect();
  const usage = process.memoryUsage();
  return { rss: vmRss("self"), heap: usage.heapUsed + usage.external };
}

/** What `docker stats` shows: usage less the page cache (cgroup v1: total_inactive_file; v2: inactive_file). */
async function boxMemory(docker: Docker, containerId: string): Promise<number> {
  const stats = (await docker.getContainer(containerId).stats({ stream: false })) as {
    memory_stats?: { usage?: number; stats?: Record<string, number> };
  };
  const memory = stats.memory_stats ?? {};
  return (
    (memory.usage ?? 0) - (memory.stats?.total_inactive_file ?? memory.stats?.inactive_file ?? 0)
  );
}

// a shared machine inflates the cold run far more than the warm turn: the load goes in the output
const loadAtStart = loadavg()[0] ?? 0;
const engine = await connectEngine();
const docker = (engine as unknown as DockerEngine).client;
const model = await new ModelServer().start("127.0.0.1");
const deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), { modelKey: "BENCH-KEY" });
const { paths } = deployment;

interface Watched {
  child: ChildProcess;
  exited: Promise<number | null>;
  output(): string;
}

function spawnWatched(args: string[]): Watched {
  const child = deployment.spawnRoster(args);
  let output = "";
  const keep = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  return { child, exited, output: () => output };
}

async function waitForOutput(watched: Watched, pattern: RegExp): Promise<void> {
  let gone = false;
  void watched.exited.then(() => {
    gone = true;
  });
  for (let i = 0; i < 1200 && !pattern.test(watched.output()); i++) {
    if (gone) throw new Error(`exited before ${pattern}:\n${watched.output()}`);
    await sleep(50);
  }
  if (!pattern.test(watched.output()))
    throw new Error(`no ${pattern} in 60 s:\n${watched.output()}`);
}

async function stop(watched: Watched): Promise<void> {
  watched.child.kill("SIGTERM");
  await watched.exited;
}

/** The model's next chat request; fails as soon as `during` does, so a broken run never hangs the bench. */
function nextRequest(during: Promise<unknown>): Promise<RecordedRequest> {
  const arrived = new Promise<RecordedRequest>((resolve) => {
    model.onRequest = (request) => {
      model.onRequest = undefined;
      resolve(request);
    };
  });
  return Promise.race([arrived, during.then(() => arrived)]);
}

async function coldRun(): Promise<number> {
  model.reset();
  model.play({ text: "ok" });
  const started = performance.now();
  const run = spawnWatched(["run", "elf", "say ok"]);
  const failed = run.exited.then((code) => {
    throw new Error(`roster run exited ${code} before the model heard from it:\n${run.output()}`);
  });
  const request = await nextRequest(failed);
  const code = await run.exited;
  if (code !== 0) throw new Error(`roster run exited ${code}:\n${run.output()}`);
  return request.arrivedAt - started;
}

const inbound = (text: string): Inbound => ({
  worker: "elf",
  channel: termChannelId("bench", "elf"),
  provider: "term",
  author: "bench",
  author_id: "term:bench",
  standing: "host-op",
  text,
});
const replyBy = () => "write your reply as plain text";

const floors: number[] = [];
const cold: number[] = [];
const warm: number[] = [];
const hostSide: number[] = [];
const memory: { label: string; box: number; rss: number; heap: number }[] = [];
const idleRss = { server: [] as number[], gateway: [] as number[] };
const router = new SessionRouter({
  paths,
  note: () => undefined,
  queueBound: 32,
  replyBy,
  recordReplies: true,
  idleMs: IDLE_MS,
});
let gateway: Watched | undefined;
let idle: Session | undefined;
try {
  // the machine's own speed in this run, the floor bench/run-latency.ts measures too
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    execFileSync("docker", ["run", "--rm", BOX_IMAGE, "true"]);
    floors.push(performance.now() - started);
  }
  // one standalone gateway for both kinds: a cold run leases it instead of embedding its own
  gateway = spawnWatched(["gateway", "start"]);
  await waitForOutput(gateway, /gateway listening/);
  if (!(await runningGateway(paths.state, paths.config)))
    throw new Error("the standalone gateway does not answer as this deployment's");

  await coldRun(); // warm-up: page cache, leaf certificates, the image checks
  for (let i = 0; i < COLD_RUNS; i++) cold.push(await coldRun());

  model.reset();
  model.play({ text: "ok" });
  // the session's first message opens it (box start, history): not counted
  await router.deliver(inbound("hello"));
  for (let i = 0; i < WARM_TURNS; i++) {
    model.play({ text: "ok" });
    let sent = Number.NaN;
    const started = performance.now();
    const delivered = router.deliver(inbound(`message ${i + 1}`), {
      onSent: () => {
        sent = performance.now();
      },
    });
    const request = await nextRequest(delivered);
    await delivered;
    warm.push(request.arrivedAt - started);
    hostSide.push(sent - started);
    // messages in a chat come apart: pi's own after-turn writes are not charged to the next one
    await sleep(100);
  }
  await router.closeAll();

  // one session opened the way the router opens one, on a process that has already run one
  model.requests.length = 0;
  const channel = termChannelId("bench", "idle");
  ensureChannel(paths, channel);
  const before = hostMemory();
  const grown = () => {
    const now = hostMemory();
    return { rss: now.rss - before.rss, heap: now.heap - before.heap };
  };
  idle = await Session.open({
    paths,
    worker: "elf",
    channel,
    provider: "term",
    replyBy: replyBy(),
    queueBound: 32,
    note: () => undefined,
    idleMs: IDLE_MS,
  });
  await sleep(3000);
  memory.push({
    label: "opened, no turn yet (3 s after the box started)",
    box: await boxMemory(docker, idle.containerId),
    ...grown(),
  });
  model.play({ text: "ok" });
  await idle.submit("say ok");
  await sleep(2000);
  memory.push({
    label: "after one turn (2 s after it settled)",
    box: await boxMemory(docker, idle.containerId),
    ...grown(),
  });
  await idle.close();
  idle = undefined;

  // the daemon refuses to start beside a standalone gateway: that one goes first
  await stop(gateway);
  gateway = undefined;
  for (let i = 0; i < RSS_SAMPLES; i++) {
    for (const kind of ["server", "gateway"] as const) {
      const daemon =
        kind === "server"
          ? spawnWatched(["server", "start", "--no-listen"])
          : spawnWatched(["gateway", "start"]);
      try {
        await waitForOutput(daemon, kind === "server" ? /gateway on/ : /gateway listening/);
        await sleep(3000);
        if (daemon.child.pid === undefined) throw new Error(`roster ${kind} start has no pid`);
        idleRss[kind].push(vmRss(daemon.child.pid));
      } finally {
        await stop(daemon);
      }
    }
  }
} finally {
  await idle?.close();
  await router.closeAll();
  if (gateway) await stop(gateway);
  await model.stop();
  await deployment.cleanup();
}

const coldP50 = quantile(cold, 0.5);
console.log(
  `Docker ${(await docker.version()).Version}, Node ${process.version}; ${COLD_RUNS} cold runs after one warm-up, ${WARM_TURNS} warm turns after the one that opened the session; 1-minute load average ${loadAtStart.toFixed(1)} at the start, ${(loadavg()[0] ?? 0).toFixed(1)} at the end\n`,
);
console.log("| measure | n | p50 ms | p90 ms | p50 vs cold |");
console.log("|---|---|---|---|---|");
const row = (label: string, values: number[]) =>
  console.log(
    `| ${label} | ${values.length} | ${ms(quantile(values, 0.5))} | ${ms(quantile(values, 0.9))} | ${ratio(quantile(values, 0.5) / coldP50)} |`,
  );
row(`floor: \`docker run --rm ${BOX_IMAGE} true\``, floors);
row("cold: `roster run` spawned → model's request (standalone gateway running)", cold);
row("warm: `deliver()` → model's request", warm);
row("warm, host side: `deliver()` → prompt line written to the box's stdin", hostSide);

console.log(
  "\n| one idle session | box MiB | host RSS growth MiB | host JS heap + buffers growth MiB | box + RSS growth MiB |",
);
console.log("|---|---|---|---|---|");
for (const entry of memory)
  console.log(
    `| ${entry.label} | ${mib(entry.box)} | ${mib(entry.rss)} | ${mib(entry.heap)} | ${mib(entry.box + entry.rss)} |`,
  );

console.log(
  `\n| idle process, no sessions (3 s after it is up, median of ${RSS_SAMPLES}) | RSS MiB |`,
);
console.log("|---|---|");
console.log(
  `| \`roster server start --no-listen\` (gateway, action host, dispatch) | ${mib(quantile(idleRss.server, 0.5))} |`,
);
console.log(`| \`roster gateway start\` alone | ${mib(quantile(idleRss.gateway, 0.5))} |`);
