import { closeSync, openSync, readSync, statSync } from "node:fs";

/**
 * Reading only what an append-only log gained since last time: the place
 * read up to is the file's inode and a byte offset, kept by the caller with
 * whatever it counted. A file with another inode (replaced, rotated) or one
 * shorter than the offset (cut) is a new log: the caller is told to start
 * its counts afresh, then it is read from its start. A line still being
 * written (no newline yet) waits for the next read; a character cut by a
 * chunk's end is decoded whole.
 */
export interface LogPlace {
  ino: number;
  offset: number;
  /**
   * For a rotated log (rotation/read-across.ts): the stamp of its newest
   * rotated file when the place was taken (0: none yet), so a rotation is
   * seen even when the new live file got the old one's inode.
   */
  last?: number;
}

export interface AppendedReader {
  /** The log is a new one: forget what was counted from the old. */
  restart(): void;
  /** A whole line (without its newline) and the byte offset it starts at. */
  line(text: string, offset: number): void;
}

/** How much of the log one read takes at a time. */
const CHUNK_BYTES = 1 << 20;

export const startOfLog = (): LogPlace => ({ ino: 0, offset: 0 });

/** Feeds the lines appended since `place` to `reader`; returns the new place (the old one if the file is absent). */
export function readAppended(file: string, place: LogPlace, reader: AppendedReader): LogPlace {
  const stat = statSync(file, { throwIfNoEntry: false });
  if (!stat) return place;
  let from = place.offset;
  if (stat.ino !== place.ino || stat.size < place.offset) {
    reader.restart();
    from = 0;
  }
  return { ino: stat.ino, offset: readLinesFrom(file, from, stat.size, reader.line) };
}

/**
 * Feeds the whole lines between `from` and `to` (bytes) to `line`; returns
 * the offset after the last whole line (where the next read starts).
 */
export function readLinesFrom(
  file: string,
  from: number,
  to: number,
  line: (text: string, offset: number) => void,
): number {
  if (to <= from) return from;
  let at = from;
  let done = from;
  const fd = openSync(file, "r");
  try {
    let carry = Buffer.alloc(0);
    while (at < to) {
      const chunk = Buffer.alloc(Math.min(CHUNK_BYTES, to - at));
      const got = readSync(fd, chunk, 0, chunk.length, at);
      if (got <= 0) break;
      // where `bytes` starts in the file
      const origin = at - carry.length;
      at += got;
      const bytes = carry.length
        ? Buffer.concat([carry, chunk.subarray(0, got)])
        : chunk.subarray(0, got);
      let start = 0;
      for (let end = bytes.indexOf(0x0a); end >= 0; end = bytes.indexOf(0x0a, start)) {
        if (end > start) line(bytes.toString("utf8", start, end), origin + start);
        start = end + 1;
      }
      carry = Buffer.from(bytes.subarray(start));
      done = at - carry.length;
    }
  } finally {
    closeSync(fd);
  }
  return done;
}
