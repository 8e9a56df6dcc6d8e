import { existsSync, statSync } from "node:fs";
import { LEDGER_FLOOR_MS } from "../../../ground/config/retention.ts";
import { readLinesFrom } from "../../../ground/files/appended-lines.ts";
import { readSegment } from "../../../ground/files/rotation/read-across.ts";
import { SETTLE_MS } from "../../../ground/files/rotation/rotate.ts";
import { logSegments } from "../../../ground/files/rotation/segments.ts";
import { settledReading } from "../../../ground/files/settled-reading.ts";

/**
 * The spend ledger (audit/usage.jsonl) read back: what budgets count from at
 * the gateway's start and what `worker ls` sums. The ledger rotates like
 * every audit log (files/rotation/), so it is read across its segments,
 * oldest first, skipping only those rotated out before the time asked for
 * (none of their lines is newer); retention keeps every segment younger
 * than LEDGER_FLOOR_MS, which holds the longest budget window whole. A
 * reading the rotation changed under is read again (settledReading): a
 * budget never forgets spend because the ledger rotated, and a rotated
 * file that can't be read (a damaged gzip) fails the reading rather than
 * count as no spend.
 */
export interface UsageLine {
  ts_ms: number;
  subject: string;
  currency: string;
  amount: number;
}

/** How far back the gateway's counters reach: the longest window (a month) with room to spare. */
export const LEDGER_HORIZON_MS = LEDGER_FLOOR_MS;

/** Every spend at or after `since` (ms), oldest first. */
export function readUsage(file: string, since: number): UsageLine[] {
  return settledReading(file, () => {
    const lines: UsageLine[] = [];
    for (const segment of logSegments(file)) {
      const line = (raw: string) => take(raw, since, lines);
      if (segment.rotatedAt === undefined) {
        // the live file as far as it goes now (a line still being written waits)
        const size = statSync(file, { throwIfNoEntry: false })?.size ?? 0;
        try {
          if (size > 0) readLinesFrom(file, 0, size, line);
        } catch (error) {
          // rotated between listing and reading: the files changed, and settledReading reads again
          if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
        }
        continue;
      }
      // a writer may still append to the file it had open for a moment after the rename
      if (segment.rotatedAt < since - SETTLE_MS) continue;
      let read = 0;
      readSegment(segment, (raw) => {
        read++;
        line(raw);
      });
      // only a file with lines is rotated: one that gives none and is still there can't be read
      if (read === 0 && segment.bytes > 0 && existsSync(segment.path))
        throw new Error(`${segment.path}: can't be read, so the spend it holds can't be counted`);
    }
    return lines;
  });
}

function take(raw: string, since: number, into: UsageLine[]): void {
  if (!raw.trim()) return;
  try {
    const line = JSON.parse(raw) as Partial<UsageLine>;
    if (
      typeof line.ts_ms === "number" &&
      line.ts_ms >= since &&
      typeof line.subject === "string" &&
      typeof line.currency === "string" &&
      typeof line.amount === "number"
    ) {
      into.push({
        ts_ms: line.ts_ms,
        subject: line.subject,
        currency: line.currency,
        amount: line.amount,
      });
    }
  } catch {
    // a torn last line from a crash is skipped, never fatal
  }
}
