import type { PendingBookkeeping, RunRecord } from "./run-record.ts";

/**
 * A run's answer comes before its bookkeeping (docs/runs.md): once its box
 * has exited, its record is written finished (how it ended, `ended_at` the
 * answer's time) with `pending` saying the store snapshot is still to be
 * taken; once it is, `pending` goes and `settled_at` says when.
 */

/** The record to write before the answer: `ended` (a finished record) with its bookkeeping pending. */
export function pendingRecord(ended: RunRecord, store: PendingBookkeeping["store"]): RunRecord {
  if (ended.state === "running")
    throw new Error(`run ${ended.id}: only a finished record can wait for its bookkeeping`);
  return { ...ended, pending: { store } };
}

/** The record once its bookkeeping is done. */
export function endPending(record: RunRecord, at = new Date().toISOString()): RunRecord {
  const { pending: _pending, ...rest } = record;
  return { ...rest, settled_at: at };
}
