import type { FileHandle } from "node:fs/promises";
import { join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { RosterError } from "../../ground/errors.ts";
import { lockHostFile, openHostLock } from "../../ground/files/host-lock.ts";

/**
 * A worker's start lock: a run start and a restore exclude each other. A run
 * takes it shared while its first record is written (what makes it a live
 * run a restore refuses to copy under); a restore takes it exclusively for
 * its whole copy. So a cron fire or a ready box's hand-off that comes during
 * a restore waits for the restore to end instead of starting a box over a
 * half-restored store, and a restore never begins between a start's check
 * and its record.
 *
 * The file is the host's own, beside the worker's store and never inside it
 * (data/workers/<w>/start.lock: no box mounts that folder), and the lock is
 * on our descriptor (files/host-lock.ts), released by the kernel when this
 * process dies.
 */
const START_LOCK = "start.lock";

export type StartLockMode = "start" | "restore";

/** The start lock is held the other way (a restore going, or a run starting). */
export class StartLockBusy extends RosterError {
  constructor(worker: string, mode: StartLockMode, waitedMs: number) {
    const waited = waitedMs ? ` (waited ${Math.round(waitedMs / 1000)} s)` : "";
    super(
      mode === "start"
        ? `${worker}'s store is being restored${waited}: the run was not started`
        : `a run of ${worker} is starting${waited}: nothing was restored`,
      { exitCode: 2 },
    );
    this.name = "StartLockBusy";
  }
}

function openStartLock(paths: RosterPaths, worker: string): Promise<FileHandle> {
  return openHostLock(join(paths.data, "workers", worker, START_LOCK));
}

/**
 * Runs `body` holding the worker's start lock: shared for a run start,
 * exclusive for a restore. When it is not free at once, `onWait` is told
 * (a run says it waits for a restore) and the lock is waited for up to waitMs,
 * or until `signal` aborts (the server stopping).
 */
export async function withStartLock<T>(
  paths: RosterPaths,
  worker: string,
  mode: StartLockMode,
  options: { waitMs: number; onWait?: () => void; signal?: AbortSignal | undefined },
  body: () => Promise<T>,
): Promise<T> {
  const file = await openStartLock(paths, worker);
  try {
    const kind = mode === "start" ? "shared" : "exclusive";
    if (!(await lockHostFile(file, kind, 0))) {
      options.onWait?.();
      if (!(await lockHostFile(file, kind, options.waitMs, options.signal)))
        throw new StartLockBusy(worker, mode, options.waitMs);
    }
    return await body();
  } finally {
    // closing our only descriptor releases the lock
    await file.close();
  }
}
