import { closeSync, openSync, readFileSync, readSync, statSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { type AppendedReader, type LogPlace, readLinesFrom } from "../appended-lines.ts";
import { linesFromEnd } from "../tail-lines.ts";
import { logSegments, type Segment } from "./segments.ts";

/**
 * Reading a rotated log as the one log it was: the rotated segments oldest
 * first, then the live file (segments.ts). A plain segment is read a chunk
 * at a time; a gzipped one is inflated whole, which retention bounds (a
 * segment is at most about `max_file`), and the inflation is capped so a
 * file someone swapped in can't take the host's memory.
 */
const MAX_INFLATED = 1 << 30;

function inflatedLines(segment: Segment): string[] {
  try {
    const bytes = gunzipSync(readFileSync(segment.path), { maxOutputLength: MAX_INFLATED });
    const lines = bytes.toString("utf8").split("\n");
    // the last line of a rotated file ends with its newline: what follows is nothing
    if (lines.at(-1) === "") lines.pop();
    return lines;
  } catch {
    return []; // a segment deleted by retention meanwhile, or not gzip: it holds no lines
  }
}

export interface AcrossOptions {
  /** Skip segments rotated out before this time (ms): none of their lines are newer. */
  since?: number;
}

/** Every whole line of the log, oldest first. */
export function eachLineAcross(
  file: string,
  line: (text: string) => void,
  options: AcrossOptions = {},
): void {
  for (const segment of logSegments(file)) {
    if (
      options.since !== undefined &&
      segment.rotatedAt !== undefined &&
      segment.rotatedAt < options.since
    )
      continue;
    if (segment.rotatedAt !== undefined) {
      readSegment(segment, line);
      continue;
    }
    // the live file up to its size now
    const size = statSync(segment.path, { throwIfNoEntry: false })?.size ?? 0;
    try {
      everyLine(segment.path, size, line);
    } catch {
      // rotated (or deleted) between listing and reading: its lines are in the next listing
    }
  }
}

/**
 * The log's whole lines, newest first, across its segments: `visit` says
 * whether to go on, and no more than `budgetBytes` are read in all.
 * Returns whether the oldest line was reached.
 */
export function linesFromEndAcross(
  file: string,
  visit: (line: string) => boolean,
  budgetBytes: number,
): boolean {
  let left = budgetBytes;
  let going = true;
  const segments = logSegments(file).reverse();
  for (const [i, segment] of segments.entries()) {
    if (left <= 0) return false;
    if (segment.compressed) {
      const lines = inflatedLines(segment);
      for (let j = lines.length - 1; j >= 0 && going && left > 0; j--) {
        const text = lines[j] ?? "";
        left -= Buffer.byteLength(text) + 1;
        if (text) going = visit(text);
      }
      if (!going || left <= 0) return false;
      continue;
    }
    const size = segment.bytes;
    const whole = linesFromEnd(
      segment.path,
      (text) => {
        going = visit(text);
        return going;
      },
      left,
    );
    left -= size;
    if (!going || !whole) return false;
    if (i === segments.length - 1) return true;
  }
  return true;
}

/** What a line from a rotated segment is given as its offset: it is in no file the live one's offsets point into. */
export const ROTATED_OFFSET = -1;

/**
 * Like readAppended, across a rotation: a reader starting afresh
 * (startOfLog) reads the rotated segments first, then the live file; when
 * the live file is a new one and the file read up to was rotated (a rename
 * keeps its inode), the rest of that file is read first and the new one
 * follows on — no count starts afresh. Only when the old file is gone
 * (compressed or deleted before this reading) or was cut is the reader told
 * to restart, and it is then given every segment again. Offsets given with
 * each line are into the live file; a line read from a rotated segment gets
 * ROTATED_OFFSET.
 */
export function readAppendedAcross(
  file: string,
  place: LogPlace,
  reader: AppendedReader,
): LogPlace {
  // listed before the live file is looked at: a rotation in between makes the old file unfound (a restart), never misread
  const segments = logSegments(file).filter((s) => s.rotatedAt !== undefined);
  const last = segments.at(-1)?.rotatedAt ?? 0;
  const live = statSync(file, { throwIfNoEntry: false });
  if (!live) return place;
  const rotated = (text: string) => reader.line(text, ROTATED_OFFSET);
  let from = place.offset;
  const fresh = place.ino === 0 && place.offset === 0;
  // a file gzipped or deleted frees its inode, which the next live file may get: a newer stamp tells the rotation too
  const rotatedSince = place.last !== undefined && place.last !== last;
  if (fresh) {
    eachRotatedLine(file, rotated);
    from = 0;
  } else if (live.ino !== place.ino || rotatedSince) {
    const at = segments.findIndex((s) => !s.compressed && s.ino === place.ino);
    const old = segments[at];
    if (old && old.bytes >= place.offset) {
      // the rest of the file read up to, then any rotated out after it
      readLinesFrom(old.path, place.offset, old.bytes, rotated);
      for (const later of segments.slice(at + 1)) readSegment(later, rotated);
    } else {
      reader.restart();
      eachRotatedLine(file, rotated);
    }
    from = 0;
  } else if (live.size < place.offset) {
    reader.restart();
    eachRotatedLine(file, rotated);
    from = 0;
  }
  return { ino: live.ino, offset: readLinesFrom(file, from, live.size, reader.line), last };
}

/** The rotated segments' lines, oldest first (not the live file's). */
function eachRotatedLine(file: string, line: (text: string) => void): void {
  for (const segment of logSegments(file))
    if (segment.rotatedAt !== undefined) readSegment(segment, line);
}

/** One rotated segment's lines, oldest first (plain or gzipped): for a reader that picks its segments itself. */
export function readSegment(segment: Segment, line: (text: string) => void): void {
  if (segment.compressed) {
    for (const text of inflatedLines(segment)) if (text) line(text);
    return;
  }
  try {
    everyLine(segment.path, segment.bytes, line);
  } catch {
    // deleted by retention meanwhile
  }
}

/**
 * Every line of a file read whole, the last one too when nothing ends it (a
 * history written by hand; a line being written now, which its reader's
 * parse then skips as torn): what reading the file as one string gave.
 */
function everyLine(path: string, size: number, line: (text: string) => void): void {
  const done = readLinesFrom(path, 0, size, (text) => line(text));
  if (done >= size) return;
  const fd = openSync(path, "r");
  try {
    const rest = Buffer.alloc(size - done);
    const got = readSync(fd, rest, 0, rest.length, done);
    const text = rest.toString("utf8", 0, got);
    if (text.trim()) line(text);
  } finally {
    closeSync(fd);
  }
}
