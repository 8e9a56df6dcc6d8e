import { closeSync, constants, fsyncSync, openSync, writeFileSync } from "node:fs";
import { open } from "node:fs/promises";

/**
 * Writes a new file and fsyncs it before saying "written": the bytes are on
 * disk, not only in the page cache. The file is created here and now (O_EXCL),
 * and never through a symlink (O_NOFOLLOW), so a name someone planted in a
 * folder they can write is refused instead of written through. The ground
 * floor under an atomic replace, which writes its temporary this way.
 */
const FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

export async function writeNewDurably(
  file: string,
  content: string | Uint8Array,
  mode: number,
): Promise<void> {
  const handle = await open(file, FLAGS, mode);
  try {
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
): void {
  const fd = openSync(file, FLAGS, mode);
  try {
    writeFileSync(fd, content);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
