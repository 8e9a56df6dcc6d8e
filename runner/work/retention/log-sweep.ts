import { stat, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import type { RetentionSection } from "../../ground/config/retention.ts";
import { errorMessage } from "../../ground/errors.ts";
import { type SweepOptions, sweepLogs } from "../../records/retention/sweep.ts";

/**
 * How often the logs are swept at most, whoever asks (the server each tick,
 * a run as it starts): a sweep lists a few folders and stats a few files, so
 * a minute keeps a live file from outgrowing `max_file` by more than a
 * minute's lines.
 */
export const LOG_SWEEP_EVERY_MS = 60_000;
/** When the last sweep began, under state/ (shared by every process of the deployment). */
const STAMP = "logs-swept.stamp";

/**
 * Sweeps the deployment's growing logs (records/retention) when the last
 * sweep is older than LOG_SWEEP_EVERY_MS; never throws — a log that can't
 * be rotated is a warning, and the rest are still swept.
 */
export async function sweepLogsWhenDue(
  paths: RosterPaths,
  section: RetentionSection | undefined,
  note: (text: string) => void,
  options: SweepOptions & { everyMs?: number } = {},
): Promise<void> {
  const stamp = join(paths.state, STAMP);
  const now = options.now ?? Date.now();
  const last = await stat(stamp).then(
    (s) => s.mtimeMs,
    () => 0,
  );
  if (now - last < (options.everyMs ?? LOG_SWEEP_EVERY_MS)) return;
  try {
    // stamped first: a second process starting meanwhile does not sweep again
    await writeFile(stamp, "").catch(() => undefined);
    await utimes(stamp, new Date(now), new Date(now)).catch(() => undefined);
    for (const log of await sweepLogs(paths, section, options))
      if (log.error) note(`warning: could not keep ${log.file} to [retention]: ${log.error}`);
  } catch (error) {
    note(`warning: the logs' retention pass failed: ${errorMessage(error)}`);
  }
}

/** The server's sweeper: at most one pass at a time, started from its tick and never awaited there. */
export class LogSweeper {
  private running: Promise<void> | undefined;

  constructor(
    private readonly paths: RosterPaths,
    private readonly section: () => RetentionSection | undefined,
    private readonly note: (text: string) => void,
  ) {}

  tick(): void {
    if (this.running) return;
    this.running = sweepLogsWhenDue(this.paths, this.section(), this.note).finally(() => {
      this.running = undefined;
    });
  }

  /** Resolves once a pass in progress has ended (the server waits for it when stopping). */
  async idle(): Promise<void> {
    await this.running;
  }
}
