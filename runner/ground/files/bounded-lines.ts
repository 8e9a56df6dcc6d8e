import { closeSync, openSync, readSync } from "node:fs";

/**
 * Every line of a file, read a chunk at a time with memory bounded whatever
 * the file holds: a log may be gigabytes, and one "line" of it (a torn
 * write, a file that is not what it claims) may be as long as the file. A
 * line longer than `maxLineBytes` is never gathered: its bytes are passed
 * over to its newline and it is counted as too long. A last line with no
 * newline is a line still being written, and is left for the next reader.
 */
export interface BoundedLines {
  /** A whole line, without its newline (empty lines are skipped). */
  line(text: string): void;
  /** A line over the bound, passed over unread. */
  tooLong(): void;
}

/** How much one read takes. */
const CHUNK_BYTES = 1 << 20;

export function eachBoundedLine(file: string, maxLineBytes: number, reader: BoundedLines): void {
  const fd = openSync(file, "r");
  try {
    const chunk = Buffer.alloc(CHUNK_BYTES);
    // the start of a line begun in an earlier chunk, at most maxLineBytes of it
    let carry: Buffer[] = [];
    let carried = 0;
    // inside a line already over the bound: skip to its newline
    let skipping = false;
    for (;;) {
      const got = readSync(fd, chunk, 0, chunk.length, null);
      if (got <= 0) break;
      let start = 0;
      for (let end = chunk.indexOf(0x0a, 0); end >= 0 && end < got; ) {
        if (skipping) skipping = false;
        else if (carried + (end - start) > maxLineBytes) reader.tooLong();
        else {
          const text = carried
            ? Buffer.concat([...carry, chunk.subarray(start, end)]).toString("utf8")
            : chunk.toString("utf8", start, end);
          if (text) reader.line(text);
        }
        carry = [];
        carried = 0;
        start = end + 1;
        end = chunk.indexOf(0x0a, start);
      }
      if (skipping || start >= got) continue;
      if (carried + (got - start) > maxLineBytes) {
        reader.tooLong();
        carry = [];
        carried = 0;
        skipping = true;
        continue;
      }
      // a copy: the chunk is read into again
      carry.push(Buffer.from(chunk.subarray(start, got)));
      carried += got - start;
    }
  } finally {
    closeSync(fd);
  }
}
