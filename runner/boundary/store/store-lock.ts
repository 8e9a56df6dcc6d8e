import { constants } from "node:fs";
import { type FileHandle, lchown, mkdir, open, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { RosterError } from "../../ground/errors.ts";
import { flockFd } from "../../ground/files/flock.ts";

/**
 * The store's whole-store lock, taken on the host: the same flock a box takes
 * with `roster-lock store -- <cmd>` (box/roster-lock: `store/.locks/<name>`),
 * so a snapshot or a restore never sees a repository or a file half-written
 * by a box that wraps its writes in it, and the other way round.
 *
 * The lock file lives in a folder a box writes, so it is opened the way every
 * store path is (store/copy.ts): each step without following a symlink, the
 * file non-blocking (a fifo planted there must not hang the host) and checked
 * to be a regular file before it is locked (files/flock.ts). What the host
 * makes there is handed to the store's owner through the open descriptor or
 * with lchown relative to an open folder, never by a path a box can swap for
 * a symlink in between.
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
      // a box may make it first: then it is its own, opened the same way below
      await mkdir(at(store, ".locks"), { mode: 0o755 }).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== "EEXIST") throw error;
      });
      // opened without following first: a box that swapped the new folder for a
      // symlink meanwhile gets a refusal, and the chown goes to what we opened
      locks = await open(at(store, ".locks"), DIR_FLAGS).catch(() => {
        throw new RosterError(
          `${join(lockStore, ".locks")} was swapped for something else as it was made: the store lock can't be taken there`,
        );
      });
      await locks.chown(owner.uid, owner.gid).catch(() => undefined);
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
    if (!(await flockFd(file, "exclusive", waitMs)))
      throw new StoreLockBusy(join(lockStore, ".locks", STORE_LOCK_NAME), waitMs);
    return await body();
  } finally {
    // closing our only descriptor releases the lock
    await file.close();
  }
}

/**
 * Hands the store's `.locks` tree to the box's user (a run's $HOME is built
 * by root). Boxes write that tree, so it is walked through open folders: each
 * entry is given by lchown relative to its folder's descriptor (a symlink gets
 * a new owner itself, never the file it names), and a folder is descended into
 * only once opened without following a link.
 */
export async function chownStoreLocks(
  lockStore: string,
  user: { uid: number; gid: number },
): Promise<void> {
  const store = await open(lockStore, DIR_FLAGS);
  try {
    await lchown(at(store, ".locks"), user.uid, user.gid).catch(() => undefined);
    const locks = await open(at(store, ".locks"), DIR_FLAGS).catch(() => undefined);
    if (locks) await chownInside(locks, user, 0);
  } finally {
    await store.close();
  }
}

/** How deep the walk goes: a box can nest folders past any stack. */
const LOCKS_DEPTH_MAX = 16;

async function chownInside(
  dir: FileHandle,
  user: { uid: number; gid: number },
  depth: number,
): Promise<void> {
  try {
    const entries = await readdir(`/proc/self/fd/${dir.fd}`).catch(() => []);
    for (const name of entries) {
      await lchown(at(dir, name), user.uid, user.gid).catch(() => undefined);
      if (depth >= LOCKS_DEPTH_MAX) continue;
      const inner = await open(at(dir, name), DIR_FLAGS).catch(() => undefined);
      if (inner) await chownInside(inner, user, depth + 1);
    }
  } finally {
    await dir.close();
  }
}
