import { snapshotAfterRun } from "../../boundary/store/passes.ts";
import { holdSettling } from "../../boundary/store/settle-lock.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { endPending } from "../../records/run-records/pending-end.ts";
import { type RunRecord, writeRecord } from "../../records/run-records/run-record.ts";

/**
 * What follows a run's answer: the store snapshot of the store as the run
 * left it, then the record's last write (its pending end made its own). The
 * caller holds the worker's settle lock (store/settle-lock.ts); the run owner
 * does it as the run settles, and a server's start for a run whose server died
 * in between (finishPending).
 */
export async function finishBookkeeping(
  paths: RosterPaths,
  dir: string,
  record: RunRecord,
  note: (text: string) => void,
): Promise<RunRecord> {
  if (!record.pending) return record;
  await snapshotAfterRun({
    paths,
    worker: record.worker,
    run: record.id,
    runDir: dir,
    channel: record.channel_id,
    note,
    maxBytes: record.pending.store.max_bytes,
    reserve: record.pending.store.reserve,
  });
  const ended = endPending(record);
  await writeRecord(dir, ended);
  return ended;
}

/** A record left pending by a runner that died: its snapshot taken and its record finished now. */
export async function finishPending(
  paths: RosterPaths,
  dir: string,
  record: RunRecord,
  note: (text: string) => void,
): Promise<RunRecord> {
  const release = await holdSettling(paths, record.worker, note);
  try {
    return await finishBookkeeping(paths, dir, record, note);
  } finally {
    await release();
  }
}
