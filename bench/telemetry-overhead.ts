/**
 * What telemetry costs the door, side by side in one run: two `roster
 * gateway start` processes on roots identical but for org.toml's
 * `[telemetry]`, `metrics_listen` and `otlp_endpoint` (with it the gateway
 * loads prom-client and counts every audit line, door-metrics.ts, and loads
 * the OpenTelemetry SDK and sends a span per decision of a run to an OTLP
 * receiver in this process, door-spans.ts; without it nothing of that
 * loads). Paired rounds, the order alternating, each on a
 * fresh process of each (as bench/gateway-pair.ts): both started (spawn to
 * "listening": the part of a `roster run` without a server that waits on its
 * own gateway), warmed, then driven one after the other with 8 clients
 * through the intercepted tunnel to a 1 KB allowed response (hey when on
 * PATH, else a Node client): p50, p99, requests/s, the gateway's CPU per
 * request (from /proc) and its peak RSS. Short rounds keep each pair close in
 * time, so a neighbour's load on a shared machine falls on both sides of a
 * pair; a ratio is the median of the rounds' own on/off ratios, with their
 * range. Once, both idle together: CPU and wakeups (prom-client's default
 * metrics watch the event loop). The telemetry gateway's /metrics is scraped
 * at each round's end, so the run shows its roster_door_decisions_total
 * counted every request, and the spans the receiver took are counted once the
 * gateway has stopped (it flushes on SIGTERM); the other's /metrics answers
 * 404 and sends nothing. SAME=1 leaves `[telemetry]` out of
 * both roots: the spread of pairs that differ in nothing, to read the ratios
 * against.
 *   npx tsx bench/telemetry-overhead.ts [rounds] [requests a round]
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:https";
import type { AddressInfo } from "node:net";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { ProxyAgent, request } from "undici";
import { mintToken } from "../runner/boundary/gateway/doors/identity.ts";
import { type RosterPaths, rosterPaths } from "../runner/ground/config/paths.ts";
import { SPAN_BURST, SPAN_RATE } from "../runner/ground/telemetry/span-budget.ts";
import { PROJECT_ROOT } from "../runner/ground/version.ts";
import { OtlpReceiver } from "../test/support/otlp-receiver.ts";
import { freePort, listeningPort, makeServerCertificate } from "./harness.ts";
import { hey, heyAvailable } from "./hey.ts";
import { median } from "./timing.ts";

const ROUNDS = Number(process.argv[2] ?? 8);
const REQUESTS = Number(process.argv[3] ?? 10_000);
const WARM = 2_000;
const CONCURRENCY = 8;
const IDLE_MS = 15_000;
/** After listening a gateway loads its leaf minter and upstream trust (Gateway.warm). */
const SETTLE_MS = 3_000;
const useHey = heyAvailable();
const SAME = process.env.SAME === "1";
/** Which of the two the "on" root sets: ON=metrics or ON=traces to take them apart. */
const PARTS = process.env.ON === "metrics" || process.env.ON === "traces" ? process.env.ON : "both";
const loadBefore = loadavg()[0] ?? 0;

const receiver = await OtlpReceiver.start();
const work = await mkdtemp(join(tmpdir(), "roster-bench-telemetry-"));
const certificate = await makeServerCertificate(["127.0.0.1"]);
const upstreamCa = join(work, "upstream-ca.pem");
await writeFile(upstreamCa, certificate.caPem);
const body = Buffer.alloc(1024, 0x61);
const upstream = createServer(
  { key: certificate.keyPem, cert: certificate.certPem },
  (_req, res) => {
    res.writeHead(200, {
      "content-type": "application/octet-stream",
      "content-length": body.length,
    });
    res.end(body);
  },
);
upstream.keepAliveTimeout = 60_000;
await new Promise<void>((ready) => upstream.listen(0, "127.0.0.1", ready));
const origin = `https://127.0.0.1:${(upstream.address() as AddressInfo).port}/1k`;

function procStat(pid: number): string[] {
  return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
}
/** utime + stime, in ms (clock ticks of 1/100 s). */
function cpuMs(pid: number): number {
  const fields = procStat(pid);
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
function statusMiB(pid: number, field: "VmRSS" | "VmHWM"): number {
  const match = new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(match?.[1] ?? 0) / 1024;
}

type Variant = "off" | "on";
const VARIANTS: Variant[] = ["off", "on"];
interface Root {
  variant: Variant;
  root: string;
  paths: RosterPaths;
  trustFile: string;
  rosterCa: string;
}

const base = `[gateway]\nupstream_ca = ["${upstreamCa}"]\n\n[[grant]]\nname = "bench"\nverdict = "allow"\nmatch = { host = "127.0.0.1" }\n`;
async function makeRoot(variant: Variant): Promise<Root> {
  const root = join(work, variant);
  const paths = rosterPaths({ ROSTER_ROOT: root });
  await mkdir(paths.config, { recursive: true });
  // the server would listen on metrics_listen; a gateway alone only reads that it is set
  const metrics = PARTS !== "traces" ? `metrics_listen = "127.0.0.1:${await freePort()}"\n` : "";
  const traces = PARTS !== "metrics" ? `otlp_endpoint = "${receiver.url}"\n` : "";
  const telemetry = variant === "on" && !SAME ? `\n[telemetry]\n${metrics}${traces}` : "";
  await writeFile(join(paths.config, "org.toml"), base + telemetry);
  return { variant, root, paths, trustFile: join(work, `trust-${variant}.pem`), rosterCa: "" };
}

interface Running {
  child: ChildProcess;
  pid: number;
  port: number;
  /** Spawn to "gateway listening on …", ms. */
  startMs: number;
  exited: Promise<unknown>;
}

/** `roster gateway start` run by its own shebang (as a shell runs it: the gateway's V8 flags). */
async function startGateway(root: Root): Promise<Running> {
  const started = performance.now();
  const child = spawn(
    join(PROJECT_ROOT, "bin/roster.mjs"),
    ["gateway", "start", "--addr", "127.0.0.1:0"],
    { env: { ...process.env, ROSTER_ROOT: root.root }, stdio: ["ignore", "pipe", "pipe"] },
  );
  const exited = new Promise((gone) => child.once("exit", gone));
  const port = await listeningPort(child, exited);
  const startMs = performance.now() - started;
  // the shebang execs node in the same process: this pid is the gateway's
  return { child, pid: child.pid ?? 0, port, startMs, exited };
}

async function stopGateway(running: Running): Promise<void> {
  if (running.child.exitCode === null) running.child.kill("SIGTERM");
  const late = setTimeout(() => running.child.kill("SIGKILL"), 5_000);
  await running.exited;
  clearTimeout(late);
}

interface Load {
  p50: number;
  p99: number;
  rps: number;
  ok: number;
}

/** The Node client of bench/gateway.ts, for a machine without hey. */
async function nodeLoad(proxy: string, rosterCa: string, total: number): Promise<Load> {
  const dispatcher = new ProxyAgent({
    uri: proxy,
    requestTls: { ca: [rosterCa, certificate.caPem] },
    connections: CONCURRENCY,
  });
  const latencies: number[] = [];
  let next = 0;
  let ok = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < total) {
        next++;
        const t0 = performance.now();
        const response = await request(origin, { dispatcher });
        await response.body.arrayBuffer();
        if (response.statusCode === 200) ok++;
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await dispatcher.close();
  latencies.sort((a, b) => a - b);
  const q = (p: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? 0;
  return { p50: q(0.5), p99: q(0.99), rps: total / seconds, ok };
}

async function drive(root: Root, port: number, total: number): Promise<Load> {
  const token = await mintToken(root.paths.identity, { subject: "org/bench", runId: "bench" });
  const proxy = `http://${token}:x@127.0.0.1:${port}`;
  if (!useHey) return nodeLoad(proxy, root.rosterCa, total);
  const result = await hey({
    url: origin,
    requests: total,
    concurrency: CONCURRENCY,
    trustFile: root.trustFile,
    proxy,
  });
  const sent = Math.floor(total / CONCURRENCY) * CONCURRENCY;
  return { p50: result.p50, p99: result.p99, rps: result.rps, ok: sent - result.failures };
}

/** The gateway's /metrics: its status, and the sum of roster_door_decisions_total. */
async function scrape(port: number): Promise<{ status: number; decisions: number }> {
  const response = await request(`http://127.0.0.1:${port}/metrics`);
  const text = await response.body.text();
  let decisions = 0;
  for (const line of text.split("\n"))
    if (line.startsWith("roster_door_decisions_total{"))
      decisions += Number(line.slice(line.lastIndexOf(" ") + 1));
  return { status: response.statusCode, decisions };
}

/** CPU time of every thread of a process, ns (finer than /proc/<pid>/stat's ticks). */
function threadsCpuNs(pid: number): number {
  let total = 0;
  for (const task of readdirSync(`/proc/${pid}/task`))
    total += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, "utf8").split(" ")[0]);
  return total;
}
/** How often the main thread has gone to sleep and been woken (its voluntary switches). */
function wakeups(pid: number): number {
  return Number(
    /voluntary_ctxt_switches:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0,
  );
}

interface Round {
  p50: number;
  p99: number;
  rps: number;
  cpuPerRequest: number;
  peakRss: number;
  startMs: number;
  /** Descriptors the gateway holds after the load (its clients' connections closed). */
  fds: number;
}
interface Idle {
  cpuMsPerS: number;
  wakeupsPerS: number;
  rss: number;
}

const roots: Record<Variant, Root> = { off: await makeRoot("off"), on: await makeRoot("on") };
const rounds: Record<Variant, Round[]> = { off: [], on: [] };
const idle: Record<Variant, Idle> = {
  off: { cpuMsPerS: 0, wakeupsPerS: 0, rss: 0 },
  on: { cpuMsPerS: 0, wakeupsPerS: 0, rss: 0 },
};
/** Per round: what the telemetry gateway's roster_door_decisions_total said, the spans received, and what it was sent. */
const counted: { said: number; spans: number; sent: number }[] = [];
const offAnswers = new Set<number>();
const pause = (ms: number) => new Promise((wait) => setTimeout(wait, ms));
const fdCount = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;

/** Both gateways started (in this order), the body run, both stopped whatever happens. */
async function withBoth<T>(
  order: Variant[],
  body: (get: (variant: Variant) => Running) => Promise<T>,
): Promise<T> {
  const running = new Map<Variant, Running>();
  try {
    for (const variant of order) running.set(variant, await startGateway(roots[variant]));
    return await body((variant) => {
      const one = running.get(variant);
      if (!one) throw new Error(`no ${variant} gateway`);
      return one;
    });
  } finally {
    for (const gateway of running.values()) await stopGateway(gateway);
  }
}

try {
  // a first start makes each root's CA and identity key: not what the rounds time
  for (const root of Object.values(roots)) {
    await stopGateway(await startGateway(root));
    root.rosterCa = readFileSync(join(root.paths.ca, "ca.crt"), "utf8");
    await writeFile(root.trustFile, root.rosterCa + certificate.caPem);
  }
  // idle: both together, the same window, once the warm-up each does after listening is over
  await withBoth(VARIANTS, async (get) => {
    await pause(SETTLE_MS);
    const from = VARIANTS.map((v) => ({
      cpu: threadsCpuNs(get(v).pid),
      woken: wakeups(get(v).pid),
    }));
    await pause(IDLE_MS);
    VARIANTS.forEach((variant, i) => {
      const pid = get(variant).pid;
      const before = from[i] ?? { cpu: 0, woken: 0 };
      idle[variant] = {
        cpuMsPerS: (threadsCpuNs(pid) - before.cpu) / 1e6 / (IDLE_MS / 1000),
        wakeupsPerS: (wakeups(pid) - before.woken) / (IDLE_MS / 1000),
        rss: statusMiB(pid, "VmRSS"),
      };
    });
  });
  // each round on fresh processes, as gateway-pair.ts does: nothing one round leaves
  // behind in a gateway (descriptors, heap) is carried into the next
  for (let round = 0; round < ROUNDS; round++) {
    const order: Variant[] = round % 2 === 0 ? VARIANTS : [...VARIANTS].reverse();
    receiver.spans.length = 0;
    await withBoth(order, async (get) => {
      for (const variant of order) await drive(roots[variant], get(variant).port, WARM);
      for (const variant of order) {
        const gateway = get(variant);
        const before = cpuMs(gateway.pid);
        const load = await drive(roots[variant], gateway.port, REQUESTS);
        const cpu = cpuMs(gateway.pid) - before;
        if (load.ok < Math.floor(REQUESTS / CONCURRENCY) * CONCURRENCY)
          throw new Error(
            `${variant}, round ${round + 1}: only ${load.ok} answered 200 (the gateway holds ${fdCount(gateway.pid)} descriptors)`,
          );
        rounds[variant].push({
          p50: load.p50,
          p99: load.p99,
          rps: load.rps,
          cpuPerRequest: cpu / load.ok,
          peakRss: statusMiB(gateway.pid, "VmHWM"),
          startMs: gateway.startMs,
          fds: fdCount(gateway.pid),
        });
        if (variant === "on") counted.push({ said: 0, spans: 0, sent: WARM + load.ok });
      }
      const on = await scrape(get("on").port);
      if (on.status !== (SAME || PARTS === "traces" ? 404 : 200))
        throw new Error(`the metrics gateway's /metrics answered ${on.status}`);
      const last = counted.at(-1);
      if (last) last.said = on.decisions;
      offAnswers.add((await scrape(get("off").port)).status);
    });
    // both stopped: the telemetry gateway has flushed what it held
    const last = counted.at(-1);
    if (last) last.spans = receiver.spans.filter((span) => span.name.startsWith("door ")).length;
  }
} finally {
  upstream.close();
  await receiver.stop();
  await rm(work, { recursive: true, force: true });
}
const loadAfter = loadavg()[0] ?? 0;

const range = (values: number[], digits: number) =>
  `${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}`;
const columns: { name: string; pick: (one: Round) => number; digits: number }[] = [
  { name: "p50 ms", pick: (one) => one.p50, digits: 2 },
  { name: "p99 ms", pick: (one) => one.p99, digits: 2 },
  { name: "req/s", pick: (one) => one.rps, digits: 0 },
  { name: "gateway CPU ms/req", pick: (one) => one.cpuPerRequest, digits: 3 },
  { name: "peak RSS MiB", pick: (one) => one.peakRss, digits: 1 },
  { name: "start to listening ms", pick: (one) => one.startMs, digits: 0 },
];
const cell = (variant: Variant, column: (typeof columns)[number]) => {
  const values = rounds[variant].map(column.pick);
  return `${median(values).toFixed(column.digits)} (${range(values, column.digits)})`;
};
/** The rounds' own on/off ratios: their median, and their range. */
const ratioCell = (column: (typeof columns)[number]) => {
  const ratios = rounds.on.map((one, i) => {
    const off = rounds.off[i];
    return off ? column.pick(one) / column.pick(off) : Number.NaN;
  });
  return `${median(ratios).toFixed(2)}x (${range(ratios, 2)})`;
};
const ratio = (on: number, off: number) => (off ? `${(on / off).toFixed(2)}x` : "-");
const crowded = VARIANTS.map(
  (variant) => `${variant} ${rounds[variant].filter((one) => one.fds > 1000).length}`,
).join(", ");
const wrong = counted.filter((one) => one.said !== one.sent);
const spanned = counted.map((one) => one.spans);

const ON = SAME
  ? "telemetry off again (SAME=1)"
  : {
      both: "metrics and traces on",
      metrics: "metrics only (ON=metrics)",
      traces: "traces only (ON=traces)",
    }[PARTS];
const lines = [
  `Node ${process.version}; ${ROUNDS} paired rounds on fresh gateway processes, the order alternating, each ${REQUESTS.toLocaleString("en")} requests a gateway (after ${WARM.toLocaleString("en")} each to warm) at ${CONCURRENCY} clients through the intercepted tunnel, 1 KB responses, driven by ${useHey ? "hey" : "a Node client (hey is not on PATH)"}; medians of the rounds with their range; load average ${loadBefore.toFixed(2)} before, ${loadAfter.toFixed(2)} after`,
  "",
  `| measure | telemetry off | ${ON} | on / off: median of the rounds' ratios (range) |`,
  "|---|---|---|---|",
  ...columns.map(
    (column) =>
      `| ${column.name} | ${cell("off", column)} | ${cell("on", column)} | ${ratioCell(column)} |`,
  ),
  "",
  `Idle, both started together and left alone for ${IDLE_MS / 1000} s after a ${SETTLE_MS / 1000} s settle (CPU of all its threads; wakeups: its main thread's voluntary switches):`,
  "",
  `| measure | telemetry off | ${ON} | on / off |`,
  "|---|---|---|---|",
  `| idle CPU ms/s | ${idle.off.cpuMsPerS.toFixed(2)} | ${idle.on.cpuMsPerS.toFixed(2)} | ${ratio(idle.on.cpuMsPerS, idle.off.cpuMsPerS)} |`,
  `| idle wakeups/s | ${idle.off.wakeupsPerS.toFixed(1)} | ${idle.on.wakeupsPerS.toFixed(1)} | ${ratio(idle.on.wakeupsPerS, idle.off.wakeupsPerS)} |`,
  `| idle RSS MiB | ${idle.off.rss.toFixed(1)} | ${idle.on.rss.toFixed(1)} | ${ratio(idle.on.rss, idle.off.rss)} |`,
  "",
  SAME
    ? "Both roots without `[telemetry]` (SAME=1): both gateways' /metrics answered 404."
    : [
        PARTS !== "traces" &&
          `The telemetry gateway's roster_door_decisions_total, scraped from its /metrics at each round's end: ${wrong.length ? `wrong in ${wrong.length} rounds (${wrong.map((one) => `${one.said} of ${one.sent}`).join(", ")})` : `${counted[0]?.said.toLocaleString("en") ?? "-"} each round, every request it was sent (${(WARM + REQUESTS).toLocaleString("en")})`}.`,
        PARTS !== "metrics" &&
          `Door spans the OTLP receiver took each round: ${range(spanned, 0)} of the ${(WARM + REQUESTS).toLocaleString("en")} requests (all one run's, and a run has its share of a process's spans: ${SPAN_BURST.toLocaleString("en")} at once, ${SPAN_RATE} a second after).`,
        `The other gateway's /metrics answered ${[...offAnswers].join(", ")}.`,
      ]
        .filter(Boolean)
        .join(" "),
  `Rounds after which a gateway still held over 1,000 descriptors: ${crowded}.`,
  "",
];
// exit only once the table is out (a pipe's writes are asynchronous)
await new Promise<void>((written) => process.stdout.write(lines.join("\n"), () => written()));
process.exit(0);
