import { statSync } from "node:fs";
import { join } from "node:path";
import { readLinesFrom } from "../../../ground/files/appended-lines.ts";
import type { DecisionRecord } from "./audit.ts";

/**
 * `roster gateway log`: the decision log made readable — which hosts a run
 * reached and which it was refused.
 */
export interface LogFilter {
  run?: string;
  deniedOnly?: boolean;
}

/**
 * Each decision the filter names, in the log's order: the log read a chunk at
 * a time (it grows for as long as the deployment lives: one string of it
 * would not fit), and a line parsed only when it may be the run's.
 */
export function eachDecision(
  auditDir: string,
  filter: LogFilter,
  take: (record: DecisionRecord) => void,
): void {
  const file = join(auditDir, "decisions.jsonl");
  const size = statSync(file, { throwIfNoEntry: false })?.size ?? 0;
  readLinesFrom(file, 0, size, (line) => {
    if (!line.trim() || (filter.run && !line.includes(filter.run))) return;
    let record: DecisionRecord;
    try {
      record = JSON.parse(line) as DecisionRecord;
    } catch {
      return;
    }
    // action dispositions share the file; `roster approvals` shows those
    if (!record.request) return;
    if (filter.run && !(record.run_id ?? "").startsWith(filter.run)) return;
    if (filter.deniedOnly && record.status < 400) return;
    take(record);
  });
}

/** The decisions the filter names (one run's: what a view of that run needs). */
export function readDecisions(auditDir: string, filter: LogFilter = {}): DecisionRecord[] {
  const out: DecisionRecord[] = [];
  eachDecision(auditDir, filter, (record) => out.push(record));
  return out;
}

/**
 * One run's decisions, read from a byte offset on (the console's running
 * summary knows where a run's first line is) rather than the whole log.
 */
export function runDecisionsFrom(
  auditDir: string,
  offset: number,
  runId: string,
): DecisionRecord[] {
  const out: DecisionRecord[] = [];
  const file = join(auditDir, "decisions.jsonl");
  const size = statSync(file, { throwIfNoEntry: false })?.size ?? 0;
  readLinesFrom(file, Math.min(offset, size), size, (line) => {
    if (!line.includes(runId)) return;
    try {
      const record = JSON.parse(line) as DecisionRecord;
      if (record.request && record.run_id === runId) out.push(record);
    } catch {
      // a torn line is no decision
    }
  });
  return out;
}

export function formatDecision(record: DecisionRecord): string {
  const r = record.request;
  const outcome =
    record.status >= 400 ? `REFUSED ${record.status}` : `${record.verdict} ${record.status}`;
  const where = `${r.method} ${r.protocol}://${r.host}${r.port === 443 || r.port === 80 ? "" : `:${r.port}`}${r.path}`;
  const rule = record.rule ? `rule ${record.rule}` : "no rule";
  const extra = [
    record.injected?.length ? `injected ${record.injected.join(",")}` : "",
    record.outcome && record.outcome !== "complete"
      ? `${record.outcome.toUpperCase()} after ${record.bytes ?? 0} bytes`
      : "",
    record.note ? `(${record.note})` : "",
  ]
    .filter(Boolean)
    .join(" ");
  return `${record.ts.slice(0, 19)}Z ${(record.subject ?? "?").padEnd(14)} ${outcome.padEnd(12)} ${where}  [${rule}]${extra ? ` ${extra}` : ""}`;
}

/** Per host: how many requests were let through and how many refused, counted as they come. */
export class HostTally {
  private readonly hosts = new Map<string, { allowed: number; refused: number }>();

  add(record: DecisionRecord): void {
    const entry = this.hosts.get(record.request.host) ?? { allowed: 0, refused: 0 };
    if (record.status >= 400) entry.refused++;
    else entry.allowed++;
    this.hosts.set(record.request.host, entry);
  }

  get size(): number {
    return this.hosts.size;
  }

  lines(): string[] {
    return [...this.hosts.entries()]
      .sort((a, b) => a[0].localeCompare(b[0]))
      .map(
        ([host, counts]) =>
          `  ${host.padEnd(40)} reached ${counts.allowed}, refused ${counts.refused}`,
      );
  }
}
