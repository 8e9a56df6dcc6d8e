import { closeSync, fstatSync, openSync, readSync } from "node:fs";

/**
 * The last `bytes` of a log file, split into lines: what a reader needs who
 * looks for a recent entry, however long the log has grown. The first line
 * may be torn (it began before the tail); a missing file has no lines.
 */
export function tailLines(file: string, bytes: number): string[] {
  let fd: number;
  try {
    fd = openSync(file, "r");
  } catch {
    return [];
  }
  try {
    const size = fstatSync(fd).size;
    const start = Math.max(0, size - bytes);
    const buffer = Buffer.alloc(size - start);
    let read = 0;
    while (read < buffer.length) {
      const n = readSync(fd, buffer, read, buffer.length - read, start + read);
      if (n === 0) break;
      read += n;
    }
    return buffer.subarray(0, read).toString("utf8").split("\n");
  } finally {
    closeSync(fd);
  }
}
