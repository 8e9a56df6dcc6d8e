/**
 * Moving a folder aside, into the archive, rather than deleting it: a rename,
 * or a copy then a removal when the two are on different filesystems (XDG
 * roots may be). What `worker rm` and `channel rm` do with what they remove.
 */
import { cp, mkdir, rename, rm } from "node:fs/promises";
import { dirname } from "node:path";

/** 2026-12-01T22:40:05.123Z → 20261201-224005: the time an archived folder is named by. */
export const archiveStamp = (now: Date) =>
  now.toISOString().slice(0, 19).replace(/[-:]/g, "").replace("T", "-");

export async function moveAside(from: string, to: string): Promise<void> {
  await mkdir(dirname(to), { recursive: true });
  try {
    await rename(from, to);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EXDEV") throw error;
    await cp(from, to, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
    await rm(from, { recursive: true, force: true });
  }
}
