import { renameSync, rmSync } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { writeNewDurably, writeNewDurablySync } from "./durable-write.ts";

/**
 * Replaces a file so that a reader sees the old bytes or the new ones, never
 * half, and the new ones are on disk before the caller says "saved": a
 * temporary in the same folder (so the rename stays on one filesystem), written
 * and fsynced, then renamed over. A failure leaves the old file whole and no
 * temporary behind. rename replaces the name in its folder, never what a
 * symlink there points at.
 */
export interface ReplaceOptions {
  /** Permission bits of the new file (less the umask): 0o600 unless it is meant to be read by others. */
  mode?: number;
  /** Hand the new file to this owner before it takes the name (a file written into a box's folder). */
  owner?: { uid: number; gid: number };
}

let sequence = 0;

/** A hidden name beside the file, unique to this process and this call. */
function temporaryFor(file: string): string {
  sequence += 1;
  return join(dirname(file), `.${basename(file)}.${process.pid}.${sequence}.tmp`);
}

export async function replaceFile(
  file: string,
  content: string | Uint8Array,
  options: ReplaceOptions = {},
): Promise<void> {
  const temporary = temporaryFor(file);
  try {
    // the owner is given through the new file's descriptor, never its name
    await writeNewDurably(temporary, content, options.mode ?? 0o600, options.owner);
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true }).catch(() => undefined);
    throw error;
  }
}

export function replaceFileSync(
  file: string,
  content: string | Uint8Array,
  options: ReplaceOptions = {},
): void {
  const temporary = temporaryFor(file);
  try {
    writeNewDurablySync(temporary, content, options.mode ?? 0o600, options.owner);
    renameSync(temporary, file);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}
