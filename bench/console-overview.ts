/**
 * The console's overview at scale: 10,000 run records of 7 workers,
 * 1,000,000 door decisions and 100,000 spend lines, written by the gateway's
 * own AuditLog and Budgets and the runner's own record writer. The overview
 * (cards and the spend, door and runs pictures) is rendered by the console
 * app itself, in process, side by side with the peer a naive page would be:
 * one read of the whole audit log (gateway/audit/view.ts readDecisions).
 *   - first render ever: no summaries yet, so they are built from the log once;
 *   - first render after a restart: summaries read from state/console, after
 *     1,000 more decisions, 100 more spends and 10 more runs;
 *   - a render while the server runs, with the same amount appended.
 * Then the door page (one worker's newest refusals), which reads the log from
 * its end. Memory is the process's heap and RSS after each. No Docker.
 *   node --expose-gc --import tsx bench/console-overview.ts
 */
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { AuditLog } from "../runner/boundary/gateway/audit/audit.ts";
import { readDecisions } from "../runner/boundary/gateway/audit/view.ts";
import { Budgets } from "../runner/boundary/gateway/spend/budget.ts";
import { initRoots } from "../runner/cli/does/init.ts";
import { rosterPaths } from "../runner/ground/config/paths.ts";
import { newRunId, type RunRecord, writeRecord } from "../runner/records/run-records/run-record.ts";
import { consoleApp } from "../runner/services/console/app.ts";
import { ConsoleFeed } from "../runner/services/console/feed.ts";
import { consoleKey } from "../runner/services/console/key.ts";
import { writeDecisions } from "./audit-lines.ts";

const RUNS = Number(process.env.RUNS ?? 10_000);
const LINES = Number(process.env.LINES ?? 1_000_000);
const SPENDS = Number(process.env.SPENDS ?? 100_000);
const WORKERS = Array.from({ length: 7 }, (_, i) => `worker${i}`);
const DAY = 86_400_000;

const root = mkdtempSync(join(tmpdir(), "roster-bench-overview-"));
const paths = rosterPaths({ ROSTER_ROOT: root });
await initRoots(paths);
for (const worker of WORKERS) {
  mkdirSync(join(paths.config, "workers", worker), { recursive: true });
  writeFileSync(join(paths.config, "workers", worker, "worker.toml"), `name = "${worker}"\n`);
}

async function addRuns(count: number, from: number): Promise<void> {
  for (let i = from; i < from + count; i++) {
    const started = new Date(Date.now() - ((RUNS - i) / RUNS) * 30 * DAY);
    const worker = WORKERS[i % WORKERS.length] ?? "worker0";
    const record: RunRecord = {
      id: newRunId(started),
      worker,
      kind: i % 4 ? "task" : "box",
      state: i % 11 ? "done" : "failed",
      started_at: started.toISOString(),
      ended_at: new Date(started.getTime() + 5_000 + (i % 90) * 1000).toISOString(),
      ended_by: i % 11 ? "exit" : i % 2 ? "ceiling" : "error",
      exit_code: i % 11 ? 0 : 1,
    };
    await writeRecord(join(paths.state, "runs", worker, record.id), record);
  }
}

const audit = new AuditLog(paths.audit);
const decide = (from: number, count: number) => writeDecisions(audit, from, count, WORKERS);
const budgets = new Budgets(paths.audit, [], []);
const spend = (from: number, count: number) => {
  for (let i = from; i < from + count; i++)
    budgets.record(
      `org/${WORKERS[i % WORKERS.length]}`,
      { tokens: 1000 + (i % 500), usd: 0.01 },
      Date.now() - ((count - (i - from)) / count) * 29 * DAY,
    );
};

const setupStarted = performance.now();
await addRuns(RUNS, 0);
decide(0, LINES);
spend(0, SPENDS);
const logMb = statSync(join(paths.audit, "decisions.jsonl")).size / 2 ** 20;
const setupS = (performance.now() - setupStarted) / 1000;

const key = consoleKey(paths);
// the console answers its own address only, to a session's cookie and token
const place = { host: "127.0.0.1", port: 7717 };
const session = key.open(7717);
const headers = {
  host: "127.0.0.1:7717",
  cookie: `roster_console_7717=${session.cookie}`,
  "x-console-session": session.token,
};
function overviewApp() {
  const feed = new ConsoleFeed(paths, () => WORKERS);
  return {
    feed,
    app: consoleApp({ paths, key, feed, sessions: async () => [], place: () => place }),
  };
}

interface Measured {
  ms: number;
  heapMb: number;
  rssMb: number;
}
async function render(app: ReturnType<typeof overviewApp>["app"]): Promise<Measured> {
  globalThis.gc?.();
  const started = performance.now();
  const response = await app.request("/", { headers });
  const body = await response.text();
  const ms = performance.now() - started;
  if (response.status !== 200 || !body.includes('data-chart="door-hosts"'))
    throw new Error(`the overview did not render: ${response.status}`);
  globalThis.gc?.();
  const memory = process.memoryUsage();
  return { ms, heapMb: memory.heapUsed / 2 ** 20, rssMb: memory.rss / 2 ** 20 };
}
function peer(): Measured {
  globalThis.gc?.();
  const started = performance.now();
  const count = readDecisions(paths.audit).length;
  const ms = performance.now() - started;
  if (count < LINES) throw new Error("the whole-log read missed lines");
  const memory = process.memoryUsage();
  return { ms, heapMb: memory.heapUsed / 2 ** 20, rssMb: memory.rss / 2 ** 20 };
}

const first = overviewApp();
const cold = await render(first.app);
first.feed.close();
let next = RUNS;
const append = async () => {
  decide(LINES + next * 100, 1_000);
  spend(SPENDS + next, 100);
  await addRuns(10, next);
  next += 10;
};
await append();
const restarted = overviewApp();
const afterRestart = await render(restarted.app);
await append();
const running = await render(restarted.app);
// the door page, live-refreshed on every decision: the newest refusals of one worker
const doorStarted = performance.now();
const door = await restarted.app.request("/door?worker=worker3&verdict=refused&fragment=1", {
  headers,
});
const doorBody = await door.text();
const doorMs = performance.now() - doorStarted;
if (door.status !== 200 || !doorBody.includes("the newest 200 shown"))
  throw new Error(`the door page did not render: ${door.status}`);
const doorMemory = process.memoryUsage();
restarted.feed.close();
const whole = peer();
await audit.close();
rmSync(root, { recursive: true, force: true });

console.log(
  `Node ${process.version}; ${RUNS.toLocaleString("en")} runs of ${WORKERS.length} workers, ${LINES.toLocaleString("en")} decisions (${logMb.toFixed(0)} MiB), ${SPENDS.toLocaleString("en")} spends (written in ${setupS.toFixed(0)} s)\n`,
);
console.log("| what | ms | vs whole-log read | heap MiB after | RSS MiB after |");
console.log("| --- | --- | --- | --- | --- |");
for (const [label, m] of [
  ["the peer: one read of the whole audit log", whole],
  ["overview, first render ever (summaries built from the log)", cold],
  [
    "overview, first render after a restart (+1,000 decisions, +100 spends, +10 runs)",
    afterRestart,
  ],
  ["overview while running (the same appended again)", running],
  [
    "door page: one worker's newest 200 refusals",
    { ms: doorMs, heapMb: doorMemory.heapUsed / 2 ** 20, rssMb: doorMemory.rss / 2 ** 20 },
  ],
] as const)
  console.log(
    `| ${label} | ${m.ms.toFixed(1)} | ${(m.ms / whole.ms).toFixed(4)}× | ${m.heapMb.toFixed(0)} | ${m.rssMb.toFixed(0)} |`,
  );
