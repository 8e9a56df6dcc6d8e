import { createReadStream, createWriteStream, renameSync, rmSync, statSync } from "node:fs";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";
import { logSegments, type Segment } from "./segments.ts";

/**
 * Gzips the rotated segments no writer can still be appending to (rotated
 * and untouched for `settleMs`), streamed so a large one never sits in
 * memory. The `.gz` is written aside and renamed into place before the
 * plain file goes: a reader meanwhile finds one or the other whole
 * (segments.ts prefers the plain one while both exist).
 */
export async function compressSettled(
  file: string,
  settleMs: number,
  now = Date.now(),
): Promise<Segment[]> {
  const done: Segment[] = [];
  for (const segment of logSegments(file)) {
    if (segment.rotatedAt === undefined || segment.compressed) continue;
    const stat = statSync(segment.path, { throwIfNoEntry: false });
    if (!stat || now - Math.max(stat.mtimeMs, segment.rotatedAt) < settleMs) continue;
    const target = `${segment.path}.gz`;
    const aside = `${target}.tmp`;
    try {
      await pipeline(
        createReadStream(segment.path),
        createGzip(),
        createWriteStream(aside, { mode: stat.mode & 0o777, flush: true }),
      );
      renameSync(aside, target);
      rmSync(segment.path, { force: true });
      done.push(segment);
    } catch (error) {
      rmSync(aside, { force: true });
      throw error;
    }
  }
  return done;
}
