import { statSync } from "node:fs";
import { join } from "node:path";
import { readLinesFrom } from "../../../ground/files/appended-lines.ts";
import { eachLineAcross, ROTATED_OFFSET } from "../../../ground/files/rotation/read-across.ts";
import { SETTLE_MS } from "../../../ground/files/rotation/rotate.ts";
import { logSegments } from "../../../ground/files/rotation/segments.ts";
import type { DecisionRecord } from "./audit.ts";

/**
 * `roster gateway log`: the decision log made readable — which hosts a run
 * reached and which it was refused.
 */
export interface LogFilter {
  run?: string;
  deniedOnly?: boolean;
  /** Nothing before this time (ms) is wanted: the files rotated out before it are not read. */
  since?: number;
}

/**
 * Each decision the filter names, in the log's order, across the files it
 * was rotated into (files/rotation/read-across.ts): read a chunk at a time
 * (it grows for as long as the deployment lives: one string of it would not
 * fit), and a line parsed only when it may be the run's.
 */
export function eachDecision(
  auditDir: string,
  filter: LogFilter,
  take: (record: DecisionRecord) => void,
): void {
  const file = join(auditDir, "decisions.jsonl");
  // the door may still append to the file it had open for a moment after the rename
  const across = filter.since === undefined ? {} : { since: filter.since - SETTLE_MS };
  eachLineAcross(
    file,
    (line) => {
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
    },
    across,
  );
}

/** The decisions the filter names (one run's: what a view of that run needs). */
export function readDecisions(auditDir: string, filter: LogFilter = {}): DecisionRecord[] {
  const out: DecisionRecord[] = [];
  eachDecision(auditDir, filter, (record) => out.push(record));
  return out;
}

/**
 * Where a run's first decision line is, as the console's door summary keeps
 * it: a byte offset into the live file whose inode is `ino` (ROTATED_OFFSET
 * when it was in a file since rotated), and the start of the hour it was
 * written in.
 */
export interface RunStart {
  ino: number;
  offset: number;
  since: number;
  /** The stamp of the newest rotated file then (LogPlace.last): a rotation since, even to a reused inode, is seen. */
  last?: number | undefined;
}

/**
 * One run's decisions, read from its first line on rather than the whole
 * log. When that place is in no file the live one is any more (rotated
 * since), the run's lines are looked for across the rotated files from the
 * hour it began: the same lines either way.
 */
export function runDecisionsFrom(
  auditDir: string,
  start: RunStart,
  runId: string,
): DecisionRecord[] {
  const out: DecisionRecord[] = [];
  const take = (line: string) => {
    if (!line.includes(runId)) return;
    try {
      const record = JSON.parse(line) as DecisionRecord;
      if (record.request && record.run_id === runId) out.push(record);
    } catch {
      // a torn line is no decision
    }
  };
  const file = join(auditDir, "decisions.jsonl");
  // the live file the place is in: its inode, and no rotation since (a new live file may get a freed inode)
  const newest = () =>
    logSegments(file)
      .filter((s) => s.rotatedAt !== undefined)
      .at(-1)?.rotatedAt ?? 0;
  const last = newest();
  const live = statSync(file, { throwIfNoEntry: false });
  const same = live?.ino === start.ino && (start.last === undefined || start.last === last);
  if (live && same && start.offset !== ROTATED_OFFSET && start.offset <= live.size) {
    readLinesFrom(file, start.offset, live.size, take);
    // rotated while it was read: what it held past the offset is now a rotated file's
    if (newest() === last) return out;
    out.length = 0;
  }
  eachLineAcross(file, take, { since: start.since - SETTLE_MS });
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
