import { closeSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { processAlive } from "./process-alive.ts";

/**
 * A lock file created with O_EXCL, holding the owner's pid. Held by a live
 * process → refused ("busy"); left by a dead one → taken over, which is how a
 * crash mid-update recovers. Locks this process holds are tracked too, so two
 * callers in one process don't both pass.
 */
const heldHere = new Set<string>();

/** The lock is held by a live process: the user can try again (the CLI prints it as one line). */
export class LockBusy extends Error {
  override name = "LockBusy";
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

export async function withFileLock<T>(
  lock: string,
  what: string,
  body: () => Promise<T>,
): Promise<T> {
  let fd: number | undefined;
  for (let attempt = 0; attempt < 2 && fd === undefined; attempt++) {
    try {
      fd = openSync(lock, "wx", 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      let holder = 0;
      try {
        holder = Number(readFileSync(lock, "utf8").trim());
      } catch {
        // vanished between open and read: try again
      }
      if (heldHere.has(lock) || (holder > 0 && holder !== process.pid && processAlive(holder))) {
        throw new LockBusy(
          `${what} is being changed by process ${holder || process.pid}; try again`,
        );
      }
      rmSync(lock, { force: true });
    }
  }
  if (fd === undefined) throw new LockBusy(`${what}: could not take its lock`);
  heldHere.add(lock);
  try {
    writeSync(fd, String(process.pid));
    return await body();
  } finally {
    closeSync(fd);
    rmSync(lock, { force: true });
    heldHere.delete(lock);
  }
}
