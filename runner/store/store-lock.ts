import { spawn } from "node:child_process";
import { constants } from "node:fs";
import { chown, type FileHandle, mkdir, open, stat } from "node:fs/promises";
import { join } from "node:path";
import { RosterError } from "../errors.ts";

/**
 * The store's whole-store lock, taken on the host: the same flock a box takes
 * with `roster-lock store -- <cmd>` (box/roster-lock: `store/.locks/<name>`),
 * so a snapshot or a restore never sees a repository or a file half-written
 * by a box that wraps its writes in it, and the other way round.
 *
 * The lock file lives in a folder a box writes, so it is opened the way every
 * store path is (store/copy.ts): each step without following a symlink, the
 * file non-blocking (a fifo planted there must not hang the host) and checked
 * to be a regular file before it is locked. Node has no flock(2), so
 * util-linux `flock` locks the open file description we hand it as fd 3 and
 * exits; the lock stays with our descriptor until we close it.
 */
export const STORE_LOCK_NAME = "store";

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** A path the kernel resolves relative to an open folder. */
const at = (dir: FileHandle, name: string) => `/proc/self/fd/${dir.fd}/${name}`;

/** The store's lock is held by someone else (a box inside `roster-lock store`, or another pass). */
export class StoreLockBusy extends RosterError {
  constructor(lockFile: string, waitedMs: number) {
    super(
      `the store lock ${lockFile} is held${waitedMs ? ` (waited ${Math.round(waitedMs / 1000)} s)` : ""}: a box of this worker is inside \`roster-lock ${STORE_LOCK_NAME}\``,
      { exitCode: 2 },
    );
    this.name = "StoreLockBusy";
  }
}

/** Opens (creating if missing) `<lockStore>/.locks/store` without following anything a box planted. */
async function openLockFile(lockStore: string): Promise<FileHandle> {
  const owner = await stat(lockStore);
  const store = await open(lockStore, DIR_FLAGS);
  try {
    let locks = await open(at(store, ".locks"), DIR_FLAGS).catch(
      (error: NodeJS.ErrnoException) => error,
    );
    if (locks instanceof Error) {
      if (locks.code !== "ENOENT")
        throw new RosterError(
          `${join(lockStore, ".locks")} is not a folder of the store (a symlink or a file): the store lock can't be taken there`,
        );
      await mkdir(at(store, ".locks"), { mode: 0o755 });
      await chown(at(store, ".locks"), owner.uid, owner.gid).catch(() => undefined);
      locks = await open(at(store, ".locks"), DIR_FLAGS);
    }
    try {
      const file = await open(
        at(locks, STORE_LOCK_NAME),
        constants.O_RDONLY | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK,
        0o644,
      ).catch(() => {
        throw new RosterError(
          `${join(lockStore, ".locks", STORE_LOCK_NAME)} can't be opened as a lock file (a symlink?): the store lock can't be taken`,
        );
      });
      const kind = await file.stat();
      if (!kind.isFile()) {
        await file.close();
        throw new RosterError(
          `${join(lockStore, ".locks", STORE_LOCK_NAME)} is not a regular file: the store lock can't be taken`,
        );
      }
      if (kind.uid !== owner.uid) await file.chown(owner.uid, owner.gid).catch(() => undefined);
      return file;
    } finally {
      await locks.close();
    }
  } finally {
    await store.close();
  }
}

/** flock(2) on our descriptor through util-linux `flock`: true when taken, false when busy past waitMs. */
function flockFd(file: FileHandle, waitMs: number): Promise<boolean> {
  const wait = waitMs > 0 ? ["-w", String(Math.max(0.01, waitMs / 1000))] : ["-n"];
  return new Promise((resolve, reject) => {
    const child = spawn("flock", ["-x", ...wait, "3"], {
      stdio: ["ignore", "ignore", "pipe", file.fd],
    });
    const stderr: Buffer[] = [];
    child.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk));
    child.on("error", reject);
    child.on("close", (code) => {
      if (code === 0) resolve(true);
      else if (code === 1 && !Buffer.concat(stderr).length) resolve(false);
      else reject(new RosterError(`flock failed: ${Buffer.concat(stderr).toString().trim()}`));
    });
  });
}

/**
 * Runs `body` holding the whole-store lock of `lockStore` (a worker's store:
 * channel stores are written by the same boxes and locked by the same file).
 * waitMs 0: refuse at once when it is held.
 */
export async function withStoreLock<T>(
  lockStore: string,
  waitMs: number,
  body: () => Promise<T>,
): Promise<T> {
  const file = await openLockFile(lockStore);
  try {
    if (!(await flockFd(file, waitMs)))
      throw new StoreLockBusy(join(lockStore, ".locks", STORE_LOCK_NAME), waitMs);
    return await body();
  } finally {
    // closing our only descriptor releases the lock
    await file.close();
  }
}
