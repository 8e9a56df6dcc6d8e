import { closeSync, existsSync, openSync, readFileSync, readSync, statSync } from "node:fs";
import { join } from "node:path";
import { workerOfSubject } from "../config/subject.ts";
import { replaceFileSync } from "../files/atomic-replace.ts";
import type { DecisionRecord } from "../gateway/audit.ts";

/**
 * The door's traffic as running counts, so a page never reads the whole audit
 * log: per hour (UTC), per host, how many requests the gateway let through and
 * how many it refused, and per worker how many it refused. Each refresh reads
 * only what was appended to audit/decisions.jsonl since the last one (the
 * byte offset is kept with the counts); a log that was replaced or cut short
 * is counted again from its start. Hours older than `keepHours` are dropped.
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
  /** "2026-12-02T10" → host → counts. */
  hours: Record<string, Record<string, DoorCounts>>;
  /** "2026-12-02T10" → worker → refused requests. */
  refusedBy: Record<string, Record<string, number>>;
}

export interface DoorWindow {
  /** Hosts by traffic, most first. */
  hosts: Array<{ host: string } & DoorCounts>;
  /** Per hour, oldest first: the whole window, hours without traffic included. */
  hours: Array<{ hour: string } & DoorCounts>;
  refusedBy: Record<string, number>;
}

/** How much of the log one read takes at a time. */
const CHUNK_BYTES = 1 << 20;

const hourOf = (ts: string) => ts.slice(0, 13);
const empty = (): SummaryFile => ({ version: 1, ino: 0, offset: 0, hours: {}, refusedBy: {} });

export class DoorSummary {
  private data: SummaryFile;
  private readonly log: string;

  constructor(
    auditDir: string,
    /** Where the counts are kept between processes (under state/). */
    private readonly file: string,
    private readonly keepHours = 48,
  ) {
    this.log = join(auditDir, "decisions.jsonl");
    this.data = load(file);
  }

  /** Counts what was appended since the last refresh; returns how many bytes it read. */
  refresh(now = new Date()): number {
    const stat = statSync(this.log, { throwIfNoEntry: false });
    if (!stat) return 0;
    if (stat.ino !== this.data.ino || stat.size < this.data.offset)
      this.data = { ...empty(), ino: stat.ino };
    const start = this.data.offset;
    if (stat.size > start) this.read(start, stat.size);
    this.prune(now);
    if (this.data.offset !== start) replaceFileSync(this.file, JSON.stringify(this.data));
    return this.data.offset - start;
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

  private read(from: number, to: number): void {
    const fd = openSync(this.log, "r");
    try {
      let at = from;
      // bytes of a line not yet ended: a line still being written waits for the next refresh,
      // and a character cut by a chunk's end is decoded whole
      let carry = Buffer.alloc(0);
      while (at < to) {
        const chunk = Buffer.alloc(Math.min(CHUNK_BYTES, to - at));
        const got = readSync(fd, chunk, 0, chunk.length, at);
        if (got <= 0) break;
        at += got;
        const bytes = carry.length
          ? Buffer.concat([carry, chunk.subarray(0, got)])
          : chunk.subarray(0, got);
        const end = bytes.lastIndexOf(0x0a);
        if (end >= 0)
          for (const line of bytes.subarray(0, end).toString("utf8").split("\n")) this.count(line);
        carry = Buffer.from(bytes.subarray(end + 1));
        this.data.offset = at - carry.length;
      }
    } finally {
      closeSync(fd);
    }
  }

  private count(line: string): void {
    if (!line) return;
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

  private prune(now: Date): void {
    const oldest = hourOf(new Date(now.getTime() - this.keepHours * 3_600_000).toISOString());
    for (const table of [this.data.hours, this.data.refusedBy])
      for (const hour of Object.keys(table)) if (hour < oldest) delete table[hour];
  }
}

function load(file: string): SummaryFile {
  if (!existsSync(file)) return empty();
  try {
    const data = JSON.parse(readFileSync(file, "utf8")) as Partial<SummaryFile>;
    if (data.version === 1 && typeof data.offset === "number" && typeof data.ino === "number") {
      const hours: SummaryFile["hours"] = {};
      for (const [hour, hosts] of Object.entries(data.hours ?? {}))
        hours[hour] = Object.assign(Object.create(null) as Record<string, DoorCounts>, hosts);
      return { ...empty(), ...data, hours } as SummaryFile;
    }
  } catch {
    // unreadable counts are counted again from the log
  }
  return empty();
}
