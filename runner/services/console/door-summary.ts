import { join } from "node:path";
import type { DecisionRecord } from "../../boundary/gateway/audit/audit.ts";
import type { RunStart } from "../../boundary/gateway/audit/view.ts";
import { workerOfSubject } from "../../ground/config/subject.ts";
import { ROTATED_OFFSET } from "../../ground/files/rotation/read-across.ts";
import { LogSummary } from "./log-summary.ts";

/**
 * The door's traffic as running counts, so a page never reads the whole audit
 * log: per hour (UTC), per host, how many requests the gateway let through and
 * how many it refused, and per worker how many it refused. Each refresh reads
 * only what was appended to audit/decisions.jsonl since the last one
 * (files/appended-lines.ts; the place is kept with the counts), following a
 * rotation into the rotated file (files/rotation/read-across.ts), so each
 * line is counted once; a log that was replaced or cut short is counted
 * again from its start. Hours older than `keepHours` are dropped.
 */
export interface DoorCounts {
  allowed: number;
  refused: number;
}

interface SummaryFile {
  version: 1;
  /** Which file the offset is into (a new inode is a new log) and how far it was read. */
  ino: number;
  offset: number;
  /** The stamp of the log's newest rotated file when it was read up to (LogPlace.last). */
  last?: number;
  /** "2026-12-02T10" → host → counts. */
  hours: Record<string, Record<string, DoorCounts>>;
  /** "2026-12-02T10" → worker → refused requests. */
  refusedBy: Record<string, Record<string, number>>;
  /**
   * "2026-12-02T10" → run id → the byte offset of its first line that hour
   * in the live file `ino` (a run page reads from there), or ROTATED_OFFSET
   * when that line is in a file rotated since.
   */
  runs?: Record<string, Record<string, number>>;
}

export interface DoorWindow {
  /** Hosts by traffic, most first. */
  hosts: Array<{ host: string } & DoorCounts>;
  /** Per hour, oldest first: the whole window, hours without traffic included. */
  hours: Array<{ hour: string } & DoorCounts>;
  refusedBy: Record<string, number>;
}

const hourOf = (ts: string) => ts.slice(0, 13);
const empty = (): SummaryFile => ({
  version: 1,
  ino: 0,
  offset: 0,
  hours: {},
  refusedBy: {},
  runs: {},
});

export class DoorSummary extends LogSummary<SummaryFile> {
  constructor(
    auditDir: string,
    /** Where the counts are kept between processes (under state/). */
    file: string,
    private readonly keepHours = 48,
  ) {
    super(join(auditDir, "decisions.jsonl"), file);
  }

  /** The last `hours` hours up to `now`: hosts, the hours themselves, refusals per worker. */
  window(hours: number, now = new Date()): DoorWindow {
    const byHost = new Map<string, DoorCounts>();
    const perHour: DoorWindow["hours"] = [];
    const refusedBy: Record<string, number> = {};
    for (let back = hours - 1; back >= 0; back--) {
      const hour = hourOf(new Date(now.getTime() - back * 3_600_000).toISOString());
      const counts: DoorCounts = { allowed: 0, refused: 0 };
      for (const [host, seen] of Object.entries(this.data.hours[hour] ?? {})) {
        const total = byHost.get(host) ?? { allowed: 0, refused: 0 };
        total.allowed += seen.allowed;
        total.refused += seen.refused;
        byHost.set(host, total);
        counts.allowed += seen.allowed;
        counts.refused += seen.refused;
      }
      perHour.push({ hour, ...counts });
      for (const [worker, refused] of Object.entries(this.data.refusedBy[hour] ?? {}))
        refusedBy[worker] = (refusedBy[worker] ?? 0) + refused;
    }
    const hosts = [...byHost.entries()]
      .map(([host, counts]) => ({ host, ...counts }))
      .sort(
        (a, b) => b.allowed + b.refused - (a.allowed + a.refused) || a.host.localeCompare(b.host),
      );
    return { hosts, hours: perHour, refusedBy };
  }

  /** Where a run's first decision line is, if it is within the kept hours: its first hour's. */
  firstOffset(runId: string): RunStart | undefined {
    const runs = this.data.runs ?? {};
    for (const hour of Object.keys(runs).sort()) {
      const offset = runs[hour]?.[runId];
      if (offset !== undefined)
        return {
          ino: this.data.ino,
          offset,
          since: Date.parse(`${hour}:00:00.000Z`),
          last: this.data.last,
        };
    }
    return undefined;
  }

  protected empty(): SummaryFile {
    return empty();
  }

  protected override rotated(): void {
    for (const runs of Object.values(this.data.runs ?? {}))
      for (const run of Object.keys(runs)) runs[run] = ROTATED_OFFSET;
  }

  protected add(line: string, at: number): void {
    let record: DecisionRecord;
    try {
      record = JSON.parse(line) as DecisionRecord;
    } catch {
      return;
    }
    // action dispositions share the file: only the door's own decisions count here
    if (!record.request || typeof record.ts !== "string") return;
    const hour = hourOf(record.ts);
    // a host is the box's to name ("__proto__" too): its table has no prototype to reach
    const hosts = this.data.hours[hour] ?? (Object.create(null) as Record<string, DoorCounts>);
    this.data.hours[hour] = hosts;
    if (record.run_id) {
      this.data.runs ??= {};
      const runs = this.data.runs[hour] ?? (Object.create(null) as Record<string, number>);
      this.data.runs[hour] = runs;
      runs[record.run_id] ??= at;
    }
    const counts = hosts[record.request.host] ?? { allowed: 0, refused: 0 };
    hosts[record.request.host] = counts;
    if (record.status >= 400) {
      counts.refused++;
      const worker = record.subject ? workerOfSubject(record.subject) : "(no run)";
      const refused = this.data.refusedBy[hour] ?? {};
      this.data.refusedBy[hour] = refused;
      refused[worker] = (refused[worker] ?? 0) + 1;
    } else counts.allowed++;
  }

  protected prune(now: number): void {
    const oldest = hourOf(new Date(now - this.keepHours * 3_600_000).toISOString());
    for (const table of [this.data.hours, this.data.refusedBy, this.data.runs ?? {}])
      for (const hour of Object.keys(table)) if (hour < oldest) delete table[hour];
  }

  protected revive(data: Partial<SummaryFile>): SummaryFile | undefined {
    if (data.version !== 1) return undefined;
    const hours: SummaryFile["hours"] = {};
    for (const [hour, hosts] of Object.entries(data.hours ?? {}))
      hours[hour] = Object.assign(Object.create(null) as Record<string, DoorCounts>, hosts);
    const runs: Record<string, Record<string, number>> = {};
    for (const [hour, ids] of Object.entries(data.runs ?? {}))
      runs[hour] = Object.assign(Object.create(null) as Record<string, number>, ids);
    return { ...empty(), ...data, hours, runs } as SummaryFile;
  }
}
