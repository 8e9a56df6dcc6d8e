import { readLinesFrom } from "./appended-lines.ts";
import { readSegment } from "./rotation/read-across.ts";
import { logSegments } from "./rotation/segments.ts";

/**
 * A log as it stood at one moment, to be read more than once with the same
 * lines each time (`gateway log --suggest` groups the refusals, then reads
 * them again to verify each suggestion): the files rotated out of it then,
 * and the live file then — which file, and how far it went. Lines written
 * since are in no reading, and a rotation or a gzip in between changes
 * nothing a reading sees: a rotated file is found by its stamp (gzipped or
 * not, it holds the same lines), and the live file by its inode, or, once
 * rotated and gzipped, as the first file rotated after the moment.
 */
export interface LogSnapshot {
  file: string;
  /** When each rotated file was rotated out (ms), oldest first. */
  rotated: number[];
  live: { ino: number; size: number } | undefined;
}

export function snapshotOf(file: string): LogSnapshot {
  const segments = logSegments(file);
  const live = segments.find((s) => s.rotatedAt === undefined);
  return {
    file,
    rotated: segments.flatMap((s) => (s.rotatedAt === undefined ? [] : [s.rotatedAt])),
    live: live ? { ino: live.ino, size: live.bytes } : undefined,
  };
}

/** Every whole line the snapshot holds, oldest first. */
export function eachSnapshotLine(snapshot: LogSnapshot, line: (text: string) => void): void {
  const segments = logSegments(snapshot.file);
  const had = new Set(snapshot.rotated);
  for (const segment of segments)
    if (segment.rotatedAt !== undefined && had.has(segment.rotatedAt)) readSegment(segment, line);
  const live = snapshot.live;
  if (!live || live.size === 0) return;
  const last = snapshot.rotated.at(-1) ?? Number.NEGATIVE_INFINITY;
  const then =
    segments.find((s) => !s.compressed && s.ino === live.ino) ??
    segments.find((s) => s.rotatedAt !== undefined && s.rotatedAt > last && !had.has(s.rotatedAt));
  if (!then) return; // deleted by retention since: it holds nothing now
  if (!then.compressed) {
    try {
      readLinesFrom(then.path, 0, live.size, (text) => line(text));
    } catch {
      // gzipped or deleted between listing and reading
    }
    return;
  }
  // the gzipped file's first `size` bytes are the lines the live file had then
  let bytes = 0;
  readSegment(then, (text) => {
    bytes += Buffer.byteLength(text) + 1;
    if (bytes <= live.size) line(text);
  });
}
