/**
 * The door's running counts (runner/services/console/door-summary.ts) against reading
 * the whole audit log, side by side in one run, on a log of 1,000,000 lines
 * written by the gateway's own AuditLog: the whole-log read the door page does
 * today (gateway/audit/view.ts readDecisions), the summary's first count of
 * the same log, and its refresh after 1,000 more lines; with each one's heap
 * growth. No Docker.
 *   node --expose-gc --import tsx bench/door-summary.ts (gc exposed: the heap figures are then measured after a collection)
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { AuditLog } from "../runner/boundary/gateway/audit/audit.ts";
import { readDecisions } from "../runner/boundary/gateway/audit/view.ts";
import { DoorSummary } from "../runner/services/console/door-summary.ts";
import { HOSTS, writeDecisions } from "./audit-lines.ts";

const LINES = Number(process.env.LINES ?? 1_000_000);
const dir = mkdtempSync(join(tmpdir(), "roster-bench-door-"));
const audit = new AuditLog(join(dir, "audit"));
const WORKERS = Array.from({ length: 7 }, (_, i) => `worker${i}`);
const write = (from: number, count: number) => writeDecisions(audit, from, count, WORKERS);
write(0, LINES);
const size = statSync(join(dir, "audit", "decisions.jsonl")).size;

function measure<T>(what: () => T): { ms: number; heapMb: number; value: T } {
  globalThis.gc?.();
  const heap = process.memoryUsage().heapUsed;
  const started = performance.now();
  const value = what();
  const ms = performance.now() - started;
  const heapMb = (process.memoryUsage().heapUsed - heap) / 2 ** 20;
  return { ms, heapMb, value };
}

const whole = measure(() => readDecisions(join(dir, "audit")).length);
const summary = new DoorSummary(join(dir, "audit"), join(dir, "door-summary.json"));
const first = measure(() => {
  summary.refresh();
  return summary.window(24).hosts.length;
});
write(LINES, 1_000);
const next = measure(() => {
  summary.refresh();
  return summary.window(24).hosts.length;
});
await audit.close();
rmSync(dir, { recursive: true, force: true });

console.log(
  `Node ${process.version}; ${LINES.toLocaleString("en")} decision lines (${(size / 2 ** 20).toFixed(0)} MiB), ${HOSTS.length} hosts\n`,
);
console.log("| what | ms | vs whole-log read | heap growth MiB |");
console.log("| --- | --- | --- | --- |");
for (const [label, m] of [
  ["whole-log read (the door page today)", whole],
  ["summary: first count of the whole log", first],
  ["summary: refresh after 1,000 more lines, then a 24-hour window", next],
] as const)
  console.log(
    `| ${label} | ${m.ms.toFixed(1)} | ${(m.ms / whole.ms).toFixed(4)}x | ${m.heapMb.toFixed(1)} |`,
  );
