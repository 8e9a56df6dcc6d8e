import { closeSync, constants, fchownSync, fsyncSync, openSync, writeFileSync } from "node:fs";
import { open } from "node:fs/promises";

/**
 * Writes a new file and fsyncs it before saying "written": the bytes are on
 * disk, not only in the page cache. The file is created here and now (O_EXCL),
 * and never through a symlink (O_NOFOLLOW), so a name someone planted in a
 * folder they can write is refused instead of written through. An owner is
 * given through the open descriptor (fchown), never by the path: someone who
 * can write the folder could swap the new name for a symlink before a chown
 * by path reached it. The ground floor under an atomic replace, which writes
 * its temporary this way.
 */
const FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

export interface NewFileOwner {
  uid: number;
  gid: number;
}

export async function writeNewDurably(
  file: string,
  content: string | Uint8Array,
  mode: number,
  owner?: NewFileOwner,
): Promise<void> {
  const handle = await open(file, FLAGS, mode);
  try {
    // best effort, as a copy into a store whose owner we may not be able to name
    if (owner) await handle.chown(owner.uid, owner.gid).catch(() => undefined);
    await handle.writeFile(content);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export function writeNewDurablySync(
  file: string,
  content: string | Uint8Array,
  mode: number,
  owner?: NewFileOwner,
): void {
  const fd = openSync(file, FLAGS, mode);
  try {
    if (owner) {
      try {
        fchownSync(fd, owner.uid, owner.gid);
      } catch {
        // best effort, as above
      }
    }
    writeFileSync(fd, content);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
