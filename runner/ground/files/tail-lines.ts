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

/** How much of a log one backward read takes at a time. */
const BACK_CHUNK = 1 << 20;

/**
 * A log's whole lines, newest first, read from its end a chunk at a time:
 * `visit` says whether to go on, and no more than `budgetBytes` are read,
 * however long the log has grown. Returns whether the log's start was reached.
 */
export function linesFromEnd(
  file: string,
  visit: (line: string) => boolean,
  budgetBytes: number,
): boolean {
  let fd: number;
  try {
    fd = openSync(file, "r");
  } catch {
    return true;
  }
  try {
    let end = fstatSync(fd).size;
    const floor = Math.max(0, end - budgetBytes);
    // the start of a line cut by the chunk before (its bytes come first in the file)
    let rest = Buffer.alloc(0);
    while (end > floor) {
      const start = Math.max(floor, end - BACK_CHUNK);
      const chunk = Buffer.alloc(end - start);
      const got = readSync(fd, chunk, 0, chunk.length, start);
      const bytes = Buffer.concat([chunk.subarray(0, got), rest]);
      end = start;
      // the first line may have begun before this chunk: it waits for the next one
      const first = start > 0 ? bytes.indexOf(0x0a) : -1;
      if (start > 0 && first < 0) {
        rest = Buffer.from(bytes); // one line longer than a chunk
        continue;
      }
      rest = Buffer.from(bytes.subarray(0, Math.max(0, first)));
      const whole = bytes
        .subarray(first + 1)
        .toString("utf8")
        .split("\n");
      for (let i = whole.length - 1; i >= 0; i--) {
        const line = whole[i];
        if (line && !visit(line)) return false;
      }
    }
    return end === 0;
  } finally {
    closeSync(fd);
  }
}
