import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type Static, Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { replaceFile, replaceFileSync } from "../../../ground/files/atomic-replace.ts";
import { SENTINEL_LEAK_RULE } from "../judging/sentinel.ts";

/**
 * The sentinel tripwire's mark on a run, kept beside the audit log: one small
 * file per run that tripped it, audit/tripwires/<run-id>.json — how many of
 * its requests were refused as `sentinel-leak`, the first one's time and
 * host, the last one's time. The runner writes it into the run's record when
 * the run ends, and `roster runs show` and the console read it meanwhile:
 * one file by name, never the audit log, however long a box has made that.
 *
 * The first trip is on disk before the box hears its refusal; later ones are
 * counted in memory and written at most once a second (a box can trip it as
 * often as it sends), and when the log closes.
 */
export const SentinelTrip = Type.Object({
  run_id: Type.String(),
  count: Type.Integer({ minimum: 1 }),
  first_at: Type.String(),
  first_host: Type.String(),
  last_at: Type.String(),
});
export type SentinelTrip = Static<typeof SentinelTrip>;

/** A run id that is one file name (ids come from run tokens: newRunId's form, or a test's). */
const RUN_ID = /^[0-9A-Za-z][0-9A-Za-z._-]{0,127}$/;
/** How often a run's later trips are written. */
const WRITE_EVERY_MS = 1000;
/** Runs whose trips are remembered at once; the one tripped longest ago is forgotten first. */
const RUNS_KEPT = 1000;

export function tripwireFile(auditDir: string, runId: string): string | undefined {
  return RUN_ID.test(runId) ? join(auditDir, "tripwires", `${runId}.json`) : undefined;
}

/** The run's mark, or undefined when it never tripped the wire (or the file is not one). */
export function readTrip(auditDir: string, runId: string): SentinelTrip | undefined {
  const file = tripwireFile(auditDir, runId);
  if (!file) return undefined;
  try {
    const parsed: unknown = JSON.parse(readFileSync(file, "utf8"));
    return Value.Check(SentinelTrip, parsed) && parsed.run_id === runId ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** What the tripwire reads of an audit line (audit.ts's DecisionRecord). */
export interface TrippedLine {
  ts: string;
  rule: string | null;
  run_id: string | null;
  request: { host: string };
}

export class Tripwire {
  private readonly trips = new Map<string, SentinelTrip>();
  private readonly due = new Set<string>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly auditDir: string) {}

  /** Told of every audit line: a `sentinel-leak` refusal of a run marks that run. */
  observe(record: TrippedLine): void {
    if (record.rule !== SENTINEL_LEAK_RULE || !record.run_id) return;
    const runId = record.run_id;
    const file = tripwireFile(this.auditDir, runId);
    if (!file) return;
    // another gateway (or this one before a restart) may have marked the run already
    const known = this.trips.get(runId) ?? readTrip(this.auditDir, runId);
    const trip: SentinelTrip = known
      ? { ...known, count: known.count + 1, last_at: record.ts }
      : {
          run_id: runId,
          count: 1,
          first_at: record.ts,
          first_host: record.request.host,
          last_at: record.ts,
        };
    this.trips.delete(runId);
    this.trips.set(runId, trip);
    if (this.trips.size > RUNS_KEPT) {
      const oldest = this.trips.keys().next().value;
      // what it has not written yet goes now (flushOne takes the count before it waits)
      if (oldest !== undefined && this.due.has(oldest)) void this.flushOne(oldest);
      if (oldest !== undefined) this.trips.delete(oldest);
    }
    if (known) {
      this.due.add(runId);
      this.timer ??= setTimeout(() => void this.flush(), WRITE_EVERY_MS).unref();
      return;
    }
    try {
      mkdirSync(join(this.auditDir, "tripwires"), { recursive: true, mode: 0o700 });
      replaceFileSync(file, `${JSON.stringify(trip)}\n`, { mode: 0o600 });
    } catch {
      // a full disk: the audit line says it all the same, and the next trip tries again
      this.due.add(runId);
    }
  }

  /** Writes the counts not yet on disk (the log closing waits for it). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const runs = [...this.due];
    this.due.clear();
    await Promise.all(runs.map((runId) => this.flushOne(runId)));
  }

  private async flushOne(runId: string): Promise<void> {
    const trip = this.trips.get(runId);
    const file = tripwireFile(this.auditDir, runId);
    if (!trip || !file) return;
    this.due.delete(runId);
    try {
      mkdirSync(join(this.auditDir, "tripwires"), { recursive: true, mode: 0o700 });
      await replaceFile(file, `${JSON.stringify(trip)}\n`, { mode: 0o600 });
    } catch {
      // as above: the audit lines keep every trip; this file is their index
    }
  }
}
