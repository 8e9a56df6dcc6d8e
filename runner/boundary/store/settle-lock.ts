import type { FileHandle } from "node:fs/promises";
import { join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { errorMessage, RosterError } from "../../ground/errors.ts";
import { lockHostFile, openHostLock } from "../../ground/files/host-lock.ts";

/**
 * A worker's settle lock: between a run's answer and its store snapshot, the
 * next run of the worker waits. A settling run holds it shared from just
 * before its answer goes out until its snapshot is taken and its record
 * written (runs settling side by side don't wait for each other; their passes
 * are kept apart by the store lock, store-lock.ts); a run's start takes it
 * exclusively for a moment, so it begins only once every snapshot pending at
 * that moment is taken.
 *
 * Like the start lock, the file is the host's own (data/workers/<w>/settle.lock,
 * never inside the store) and the lock is on our descriptor
 * (files/host-lock.ts), dropped by the kernel when this process dies: a server
 * killed between an answer and its snapshot holds nothing, and its next start
 * finishes the snapshot (services/server/recover.ts).
 */
const SETTLE_LOCK = "settle.lock";

/** How long a start waits for the snapshots before it: a pass waits 30 s for a box's lock, and copies. */
export const START_WAITS_FOR_SNAPSHOT_MS = 10 * 60_000;

function openSettleLock(paths: RosterPaths, worker: string): Promise<FileHandle> {
  return openHostLock(join(paths.data, "workers", worker, SETTLE_LOCK));
}

/**
 * Holds the worker's settle lock shared until the returned release is called.
 * A lock that can't be taken (the data folder unwritable) is said and not
 * held: the snapshot still follows, it never fails a run.
 */
export async function holdSettling(
  paths: RosterPaths,
  worker: string,
  note: (text: string) => void,
): Promise<() => Promise<void>> {
  let file: FileHandle | undefined;
  try {
    file = await openSettleLock(paths, worker);
    // only a start holds it exclusively, and only for a moment
    await lockHostFile(file, "shared", START_WAITS_FOR_SNAPSHOT_MS);
  } catch (error) {
    note(`${worker}'s settle lock was not taken: ${errorMessage(error)}`);
  }
  const held = file;
  return async () => {
    // closing our only descriptor releases the lock
    await held?.close().catch(() => undefined);
  };
}

/** The snapshots before a start did not end in time. */
export class SnapshotPending extends RosterError {
  constructor(worker: string, waitedMs: number) {
    super(
      `a run of ${worker} before this one is still taking its store snapshot (waited ${Math.round(waitedMs / 1000)} s): the run was not started`,
      { exitCode: 2 },
    );
    this.name = "SnapshotPending";
  }
}

/**
 * Resolves once no run of the worker is between its answer and its snapshot
 * (`onWait` is told when one is); rejects after waitMs, or when `signal` aborts.
 */
export async function waitForSnapshots(
  paths: RosterPaths,
  worker: string,
  options: { waitMs?: number; onWait?: () => void; signal?: AbortSignal | undefined },
): Promise<void> {
  const waitMs = options.waitMs ?? START_WAITS_FOR_SNAPSHOT_MS;
  const file = await openSettleLock(paths, worker);
  try {
    if (await lockHostFile(file, "exclusive", 0)) return;
    options.onWait?.();
    if (!(await lockHostFile(file, "exclusive", waitMs, options.signal)))
      throw new SnapshotPending(worker, waitMs);
  } finally {
    await file.close();
  }
}
