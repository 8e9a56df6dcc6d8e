import { logSegments } from "./rotation/segments.ts";

/** Which files the log is now (not how long the live one has grown). */
function listing(file: string): string {
  return logSegments(file)
    .map((s) => `${s.ino}:${s.rotatedAt ?? "live"}:${s.compressed}`)
    .join(",");
}

/**
 * A whole reading of a rotated log (files/rotation/read-across.ts) that may
 * miss no line: the spend ledger, where a budget that forgot what was spent
 * would let it be spent again. A file renamed, gzipped or deleted while it
 * was read may have been passed over, so the reading is done again whenever
 * the log's files changed under it; a log that never holds still fails the
 * reading (fail closed) rather than answer short.
 */
export function settledReading<T>(file: string, read: () => T, tries = 5): T {
  for (let i = 0; i < tries; i++) {
    const before = listing(file);
    const result = read();
    if (listing(file) === before) return result;
  }
  throw new Error(`${file}: its files changed ${tries} times while it was read; try again`);
}
