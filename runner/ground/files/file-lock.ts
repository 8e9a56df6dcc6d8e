import { linkSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { uptime } from "node:os";
import { processAlive } from "./process-alive.ts";

/**
 * A lock file holding the owner's pid, created atomically with that pid in it
 * (written to a private file first, then hard-linked into place, which fails
 * if the lock exists), so nobody ever reads a lock without its owner. Held by
 * a live process → refused ("busy"); left by a dead one, or written before the
 * machine last booted → taken over, which is how a crash mid-update recovers.
 * Locks this process holds are tracked too, so two callers in one process
 * don't both pass.
 */
const heldHere = new Set<string>();

/** The lock is held by a live process: the user can try again (the CLI prints it as one line). */
export class LockBusy extends Error {
  override name = "LockBusy";
  /** The pid that holds the lock (this process's own when it is held here). */
  readonly holder: number;
  constructor(message: string, holder: number) {
    super(message);
    this.holder = holder;
  }
}

/** Like withFileLock, but a busy lock is waited for (polled) up to `waitMs` before giving up. */
export async function withFileLockWaiting<T>(
  lock: string,
  what: string,
  waitMs: number,
  body: () => Promise<T>,
): Promise<T> {
  const until = Date.now() + waitMs;
  for (;;) {
    try {
      return await withFileLock(lock, what, body);
    } catch (error) {
      if (!(error instanceof LockBusy) || Date.now() > until) throw error;
      await new Promise((resolve) => setTimeout(resolve, 25 + Math.random() * 50));
    }
  }
}

const readHolder = (file: string): number | undefined => {
  try {
    return Number(readFileSync(file, "utf8").trim()) || 0;
  } catch {
    return undefined; // gone
  }
};

/**
 * Moves a dead owner's lock aside and deletes it. Two takers may both judge
 * the same lock dead; the rename lets one of them move it, and a taker that
 * finds it moved a live owner's fresh lock instead puts it back.
 */
function takeOverStale(lock: string, deadPid: number): void {
  const aside = `${lock}.stale-${process.pid}`;
  try {
    renameSync(lock, aside);
  } catch {
    return; // someone else moved it first
  }
  if (readHolder(aside) !== deadPid) {
    try {
      linkSync(aside, lock); // not the lock we judged: give it back to its owner
    } catch {
      // a third taker made a new one meanwhile; the owner keeps its own copy's pid
    }
  }
  rmSync(aside, { force: true });
}

/**
 * Whether the pid in a lock still names its owner: a process by that number
 * is alive, and the lock was written since this machine booted (after a
 * reboot the number may belong to anything).
 */
function ownerLives(lock: string, holder: number): boolean {
  if (!processAlive(holder)) return false;
  try {
    return statSync(lock).mtimeMs >= Date.now() - uptime() * 1000 - 5_000;
  } catch {
    return false; // gone: released
  }
}

/** Creates the lock with this process's pid in it, or says who holds it. */
function acquire(lock: string, what: string): void {
  const mine = `${lock}.${process.pid}.new`;
  writeFileSync(mine, String(process.pid), { mode: 0o600 });
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        linkSync(mine, lock);
        return;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
      const holder = readHolder(lock);
      if (holder === undefined) continue; // released between link and read
      if (
        heldHere.has(lock) ||
        (holder > 0 && holder !== process.pid && ownerLives(lock, holder))
      ) {
        throw new LockBusy(
          `${what} is being changed by process ${holder || process.pid}; try again`,
          holder || process.pid,
        );
      }
      takeOverStale(lock, holder);
    }
    throw new LockBusy(`${what}: could not take its lock (${lock})`, 0);
  } finally {
    rmSync(mine, { force: true });
  }
}

export async function withFileLock<T>(
  lock: string,
  what: string,
  body: () => Promise<T>,
): Promise<T> {
  acquire(lock, what);
  heldHere.add(lock);
  try {
    return await body();
  } finally {
    // only our own lock is removed: never one a taker put back for its owner
    if (readHolder(lock) === process.pid) rmSync(lock, { force: true });
    heldHere.delete(lock);
  }
}
