import { rmSync } from "node:fs";
import type { RetentionPolicy } from "./rotate.ts";
import { logSegments, type Segment } from "./segments.ts";

/**
 * Deletes the rotated segments retention no longer keeps: older than
 * `keepMs`, then the oldest while the rotated ones hold more than
 * `keepBytes`. The live file is never deleted, nor a segment younger than
 * `floorMs`. Returns what went.
 */
export function pruneSegments(file: string, policy: RetentionPolicy, now = Date.now()): Segment[] {
  const rotated = logSegments(file).filter((s) => s.rotatedAt !== undefined);
  const deletable = (s: Segment) => now - (s.rotatedAt ?? now) >= policy.floorMs;
  const gone: Segment[] = [];
  let total = rotated.reduce((sum, s) => sum + s.bytes, 0);
  for (const segment of rotated) {
    const old = now - (segment.rotatedAt ?? now) >= policy.keepMs;
    if (!deletable(segment) || !(old || total > policy.keepBytes)) continue;
    rmSync(segment.path, { force: true });
    total -= segment.bytes;
    gone.push(segment);
  }
  return gone;
}
