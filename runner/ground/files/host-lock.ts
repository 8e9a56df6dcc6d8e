import { constants } from "node:fs";
import { type FileHandle, mkdir, open } from "node:fs/promises";
import { dirname } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { tryLock } from "fs-native-extensions";

/**
 * A lock only host processes take (a worker's start and settle locks; never
 * a file a box can reach), taken in this process: an open file description
 * lock (fcntl F_OFD_SETLK on Linux, flock elsewhere) on a descriptor we hold.
 * Like flock(2) it belongs to our open file, stays until we close it and is
 * dropped by the kernel when this process dies, so a crash leaves nothing
 * stale. Unlike files/flock.ts it starts no process: a server's fork costs
 * about 10 ms of its loop per process at its size, and a run's start took
 * two of these locks on its way to the box.
 *
 * It does not see flock(2) locks nor they it, so every taker of one file
 * takes it here, on a file opened by openHostLock.
 *
 * Resolves true when taken, false when still busy after waitMs (0: don't
 * wait); rejects when `signal` aborts the wait. A wait asks again and again,
 * soon at first and then every POLL_MAX_MS: these locks are held for moments
 * (a record's write, a snapshot) or minutes (a restore), never contended in
 * a tight loop.
 */
const POLL_FIRST_MS = 5;
const POLL_MAX_MS = 100;

export async function lockHostFile(
  file: FileHandle,
  mode: "shared" | "exclusive",
  waitMs: number,
  signal?: AbortSignal,
): Promise<boolean> {
  const shared = mode === "shared";
  if (tryLock(file.fd, { shared })) return true;
  const deadline = Date.now() + waitMs;
  let pollMs = POLL_FIRST_MS;
  while (Date.now() < deadline) {
    signal?.throwIfAborted();
    await sleep(Math.min(pollMs, Math.max(1, deadline - Date.now())), undefined, {
      ...(signal ? { signal } : {}),
    });
    if (tryLock(file.fd, { shared })) return true;
    pollMs = Math.min(POLL_MAX_MS, pollMs * 2);
  }
  return false;
}

/**
 * A lock file opened to be locked here, made (0600, with its folder) if it
 * isn't there: read-write, which an exclusive lock needs, and never through a
 * symlink.
 */
export async function openHostLock(path: string): Promise<FileHandle> {
  await mkdir(dirname(path), { recursive: true, mode: 0o755 });
  return open(path, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
}
