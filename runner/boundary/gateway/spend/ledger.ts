import { LEDGER_FLOOR_MS } from "../../../ground/config/retention.ts";
import { eachLineAcross } from "../../../ground/files/rotation/read-across.ts";
import { SETTLE_MS } from "../../../ground/files/rotation/rotate.ts";
import { settledReading } from "../../../ground/files/settled-reading.ts";

/**
 * The spend ledger (audit/usage.jsonl) read back: what budgets count from at
 * the gateway's start and what `worker ls` sums. The ledger rotates like
 * every audit log (files/rotation/), so it is read across its segments,
 * oldest first, skipping only those rotated out before the time asked for
 * (none of their lines is newer); retention keeps every segment younger
 * than LEDGER_FLOOR_MS, which holds the longest budget window whole. A
 * reading the rotation changed under is read again (settledReading): a
 * budget never forgets spend because the ledger rotated.
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
    // a writer may still append to the file it had open for a moment after the rename
    eachLineAcross(file, (raw) => take(raw, since, lines), { since: since - SETTLE_MS });
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
