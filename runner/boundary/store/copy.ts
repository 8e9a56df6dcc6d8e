import { constants } from "node:fs";
import {
  type FileHandle,
  mkdir,
  open,
  readFile,
  readlink,
  stat,
  writeFile,
} from "node:fs/promises";
import { join, posix, resolve } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { RosterError } from "../../ground/errors.ts";
import { replaceFile } from "../../ground/files/atomic-replace.ts";

/**
 * `roster box cp-in` / `cp-out`: one file into or out of a worker's store
 * (data/workers/<w>/store, mounted read-write in every box of that worker).
 * The store is written by boxes, so every folder on the way may be a symlink
 * a box planted to reach the host. The path is walked one folder at a time,
 * each opened without following a symlink, and the file itself is opened (or
 * created) relative to the last folder's descriptor, again without following
 * one. Nothing outside the store is ever read or written; a path that would
 * lead there is refused, naming what it resolved to.
 */
export const STORE_FILE_MAX = 256 * 1024 * 1024;

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

export function storeRoot(paths: RosterPaths, worker: string): string {
  return join(paths.data, "workers", worker, "store");
}

function refuse(message: string): RosterError {
  return new RosterError(message, { exitCode: 2 });
}

/** The path names nothing (yet): the store, a folder on the way, or the file itself is missing. */
export class StoreFileMissing extends RosterError {
  override name = "StoreFileMissing";
  constructor(message: string) {
    super(message, { exitCode: 2 });
  }
}

/** The store path's folders and file name; refuses what would leave the store by its spelling. */
function splitStorePath(root: string, storePath: string): { dirs: string[]; name: string } {
  if (!storePath || storePath.includes("\0")) throw refuse("the store path is empty");
  if (storePath.startsWith("/"))
    throw refuse(`"${storePath}" is absolute: give a path inside the store, e.g. notes/today.md`);
  const normal = posix.normalize(storePath);
  if (normal === ".." || normal.startsWith("../"))
    throw refuse(`"${storePath}" resolves to ${resolve(root, normal)}, outside the store ${root}`);
  const parts = normal.split("/").filter((part) => part && part !== ".");
  const name = parts.pop();
  if (!name) throw refuse(`"${storePath}" names the store itself, not a file in it`);
  return { dirs: parts, name };
}

/** A path the kernel resolves relative to an open folder (the magic link is that folder). */
const at = (dir: FileHandle, name: string) => `/proc/self/fd/${dir.fd}/${name}`;

/** Explains why `name` in `dir` could not be used as a folder or a file of the store. */
async function why(dir: FileHandle, name: string, storePath: string): Promise<RosterError> {
  try {
    const target = await readlink(at(dir, name));
    return refuse(
      `"${storePath}" goes through a symlink (${name} → ${target}): it would resolve outside the store's own folders, so it is refused`,
    );
  } catch {
    return refuse(`"${storePath}": ${name} is not a regular folder or file of the store`);
  }
}

/** Opens each folder of the path in turn, never following a symlink; creates missing ones if asked. */
async function walk(
  root: string,
  dirs: string[],
  storePath: string,
  create: { uid: number; gid: number } | undefined,
): Promise<FileHandle> {
  let dir = await open(root, DIR_FLAGS).catch(() => {
    throw new StoreFileMissing(`the store ${root} does not exist yet: the worker has not run`);
  });
  try {
    for (const name of dirs) {
      let next: FileHandle;
      try {
        next = await open(at(dir, name), DIR_FLAGS);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== "ENOENT" || !create) {
          if (code === "ENOENT")
            throw new StoreFileMissing(`"${storePath}" does not exist in the store`);
          throw await why(dir, name, storePath);
        }
        await mkdir(at(dir, name), { mode: 0o755 });
        // opened without following before it is handed over: a folder a box
        // swapped for a symlink meanwhile is refused, and the chown goes to
        // the folder we hold, never to a path
        next = await open(at(dir, name), DIR_FLAGS).catch(async () => {
          throw await why(dir, name, storePath);
        });
        await next.chown(create.uid, create.gid).catch(() => undefined);
      }
      await dir.close();
      dir = next;
    }
    return dir;
  } catch (error) {
    await dir.close();
    throw error;
  }
}

/** Host file → store. Written beside its place and renamed over it, owned like the store. */
export async function copyIntoStore(
  paths: RosterPaths,
  worker: string,
  hostFile: string,
  storePath: string,
): Promise<number> {
  const source = await stat(hostFile).catch(() => {
    throw refuse(`${hostFile} does not exist`);
  });
  if (!source.isFile()) throw refuse(`${hostFile} is not a regular file`);
  if (source.size > STORE_FILE_MAX)
    throw refuse(`${hostFile} is ${source.size} bytes, over the ${STORE_FILE_MAX}-byte limit`);
  const content = await readFile(hostFile);
  await replaceStoreFile(paths, worker, storePath, content);
  return content.length;
}

/** The store's owner, for what the host makes there; undefined when the store is missing. */
async function storeOwner(root: string): Promise<{ uid: number; gid: number } | undefined> {
  const owner = await stat(root).catch(() => undefined);
  return owner ? { uid: owner.uid, gid: owner.gid } : undefined;
}

/** `content` as the store file `storePath`: written beside it and renamed over it, owned like the store. */
export async function replaceStoreFile(
  paths: RosterPaths,
  worker: string,
  storePath: string,
  content: Buffer | string,
): Promise<void> {
  const root = storeRoot(paths, worker);
  const { dirs, name } = splitStorePath(root, storePath);
  const ids = await storeOwner(root);
  const dir = await walk(root, dirs, storePath, ids);
  try {
    const existing = await open(at(dir, name), constants.O_RDONLY | constants.O_NOFOLLOW).catch(
      (error: NodeJS.ErrnoException) => error,
    );
    if (existing instanceof Error) {
      if (existing.code !== "ENOENT") throw await why(dir, name, storePath);
    } else {
      const kind = await existing.stat();
      await existing.close();
      if (!kind.isFile()) throw refuse(`"${storePath}" exists and is not a regular file`);
    }
    // the temporary is created new (never through a name the box planted) and
    // handed to the store's owner; the rename replaces a name in this folder,
    // never what a symlink there points at
    await replaceFile(at(dir, name), content, { mode: 0o644, ...(ids ? { owner: ids } : {}) });
  } finally {
    await dir.close();
  }
}

/**
 * `text` appended to the store file `storePath` (made when missing, owned like
 * the store) in one write on an O_APPEND descriptor, so a box appending to the
 * same file at the same time keeps its lines whole and so do we.
 */
export async function appendToStoreFile(
  paths: RosterPaths,
  worker: string,
  storePath: string,
  text: string,
): Promise<void> {
  const root = storeRoot(paths, worker);
  const { dirs, name } = splitStorePath(root, storePath);
  const ids = await storeOwner(root);
  const dir = await walk(root, dirs, storePath, ids);
  let file: FileHandle;
  try {
    file = await open(
      at(dir, name),
      constants.O_RDWR |
        constants.O_APPEND |
        constants.O_CREAT |
        constants.O_NOFOLLOW |
        constants.O_NONBLOCK,
      0o644,
    ).catch(async () => {
      throw await why(dir, name, storePath);
    });
  } finally {
    await dir.close();
  }
  try {
    const kind = await file.stat();
    if (!kind.isFile()) throw refuse(`"${storePath}" is not a regular file`);
    if (ids && kind.uid !== ids.uid) await file.chown(ids.uid, ids.gid).catch(() => undefined);
    // a last line left without its newline would swallow the first of ours
    let lead = "";
    if (kind.size > 0) {
      const last = Buffer.alloc(1);
      await file.read(last, 0, 1, kind.size - 1);
      if (last[0] !== 0x0a) lead = "\n";
    }
    await file.write(lead + text);
  } finally {
    await file.close();
  }
}

/**
 * A regular file of the store, opened for reading through its own
 * descriptor: never through a symlink, never a FIFO, device or folder. The
 * caller closes it and bounds how much it reads.
 */
export async function openStoreFile(
  paths: RosterPaths,
  worker: string,
  storePath: string,
): Promise<FileHandle> {
  const root = storeRoot(paths, worker);
  const { dirs, name } = splitStorePath(root, storePath);
  const dir = await walk(root, dirs, storePath, undefined);
  let file: FileHandle;
  try {
    // O_NONBLOCK: a FIFO a box left there must not hang the reader
    file = await open(
      at(dir, name),
      constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
    ).catch(async (error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT")
        throw new StoreFileMissing(`"${storePath}" does not exist in the store`);
      throw await why(dir, name, storePath);
    });
  } finally {
    await dir.close();
  }
  const kind = await file.stat().catch(async (error: unknown) => {
    await file.close();
    throw error;
  });
  if (!kind.isFile()) {
    await file.close();
    throw refuse(`"${storePath}" is not a regular file`);
  }
  return file;
}

/** Store → host file. Only a regular file of the store, read through its own descriptor. */
export async function copyOutOfStore(
  paths: RosterPaths,
  worker: string,
  storePath: string,
  hostFile: string,
): Promise<number> {
  const file = await openStoreFile(paths, worker, storePath);
  try {
    const kind = await file.stat();
    if (kind.size > STORE_FILE_MAX)
      throw refuse(`"${storePath}" is ${kind.size} bytes, over the ${STORE_FILE_MAX}-byte limit`);
    const content = await file.readFile();
    await writeFile(hostFile, content);
    return content.length;
  } finally {
    await file.close();
  }
}
