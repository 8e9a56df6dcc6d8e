import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { DecisionRecord } from "../../boundary/gateway/audit/audit.ts";
import { readDecisions, runDecisionsFrom } from "../../boundary/gateway/audit/view.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import type { RunRecord } from "../../records/run-records/run-record.ts";
import { DoorSummary } from "./door-summary.ts";
import { RunIndex } from "./run-index.ts";
import { SpendSummary } from "./spend-summary.ts";

/** How long the door's counts (and where each run's lines start) are kept. */
const DOOR_KEEP_HOURS = 48;

/**
 * The running summaries the overview draws from, one of each per console,
 * kept under state/console/ so a restart reads on where the last one stopped.
 * `fresh()` brings all three up to date with what was appended or added since
 * the last page view; no page reads the whole audit log or every run record.
 */
export class ConsoleSummaries {
  readonly runs: RunIndex;
  readonly spend: SpendSummary;
  readonly door: DoorSummary;
  private readonly audit: string;

  constructor(paths: RosterPaths) {
    const dir = join(paths.state, "console");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.runs = new RunIndex(paths.state, join(dir, "run-index.json"));
    this.spend = new SpendSummary(paths.audit, join(dir, "spend-summary.json"));
    this.door = new DoorSummary(paths.audit, join(dir, "door-summary.json"), DOOR_KEEP_HOURS);
    this.audit = paths.audit;
  }

  /**
   * One run's door decisions: read from its first line on, which the door's
   * summary knows for a run begun inside its kept hours (one it does not
   * know made none); an older run's are looked for in the whole log, across
   * the files rotated out of it since the run began.
   */
  decisionsOf(record: RunRecord, now = new Date()): DecisionRecord[] {
    this.door.refresh(now.getTime());
    // a run begun before the kept hours may have lines the summary no longer places
    const began = Date.parse(record.started_at);
    const kept = began > now.getTime() - (DOOR_KEEP_HOURS - 1) * 3_600_000;
    if (kept) {
      const from = this.door.firstOffset(record.id);
      return from === undefined ? [] : runDecisionsFrom(this.audit, from, record.id);
    }
    const since = Number.isFinite(began) ? { since: began } : {};
    return readDecisions(this.audit, { run: record.id, ...since }).filter(
      (d) => d.run_id === record.id,
    );
  }

  fresh(now = new Date()): this {
    this.runs.refresh();
    this.spend.refresh(now.getTime());
    this.door.refresh(now.getTime());
    return this;
  }
}
