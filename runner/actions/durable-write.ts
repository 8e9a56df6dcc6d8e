import { closeSync, fsyncSync, openSync, renameSync, writeSync } from "node:fs";

/**
 * Replaces a file so that a reader sees the old bytes or the new ones, never
 * half, and the new ones are on disk before the caller says "saved": write a
 * temporary beside it, fsync, rename over.
 */
export function writeDurably(file: string, text: string, mode = 0o600): void {
  const temporary = `${file}.${process.pid}.tmp`;
  const fd = openSync(temporary, "w", mode);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, file);
}
