import { renameSync, statSync } from "node:fs";
import { LockBusy, withFileLock } from "../file-lock.ts";
import { logSegments, rotatedPath } from "./segments.ts";

/** What `[retention]` keeps of one log (config/retention.ts reads it from org.toml). */
export interface RetentionPolicy {
  /** The live file is rotated once it holds this many bytes. */
  maxFileBytes: number;
  /** …or once it has been the live file this long (0: never by age). */
  rotateAfterMs: number;
  /** Rotated segments older than this are deleted. */
  keepMs: number;
  /** Rotated segments past this many bytes in all (as stored) are deleted, oldest first. */
  keepBytes: number;
  /**
   * Nothing younger than this is deleted whatever the sizes say: the spend
   * ledger must hold every budget window whole, or a budget would forget
   * what was spent and let a run spend it again.
   */
  floorMs: number;
}

/**
 * How long a rotated file stays as it is before it is compressed: a writer
 * that keeps its file open (the door's audit log) notices the rename within
 * a second (audit.ts) and a line it wrote meanwhile lands whole in the old
 * file, which must not be gzipped under it.
 */
export const SETTLE_MS = 60_000;

/** Whether the live file is due: its size, or how long it has been live. */
export function rotationDue(file: string, policy: RetentionPolicy, now: number): boolean {
  const live = statSync(file, { throwIfNoEntry: false });
  if (!live || live.size === 0) return false;
  if (live.size >= policy.maxFileBytes) return true;
  if (policy.rotateAfterMs <= 0) return false;
  // it began when the last one was rotated out; a log never rotated began at its birth (where the filesystem keeps one)
  const last = logSegments(file)
    .filter((s) => s.rotatedAt !== undefined)
    .at(-1)?.rotatedAt;
  const began = last ?? (live.birthtimeMs > 0 ? live.birthtimeMs : undefined);
  return began !== undefined && now - began >= policy.rotateAfterMs;
}

/**
 * Renames the live file to its rotated name when it is due. Writers append
 * with O_APPEND to the path (they open it anew, or notice the rename), so a
 * line is never split: it is wholly in the old file or wholly in the new.
 * One rotation at a time per log (a lock beside it); a busy lock is someone
 * else rotating it now. Returns the rotated file's path, or undefined.
 */
export async function rotateIfDue(
  file: string,
  policy: RetentionPolicy,
  now = Date.now(),
): Promise<string | undefined> {
  if (!rotationDue(file, policy, now)) return undefined;
  try {
    return await withFileLock(`${file}.rotate.lock`, `rotating ${file}`, async () => {
      if (!rotationDue(file, policy, now)) return undefined;
      // two rotations in one millisecond would share a name: the later waits it out
      let at = now;
      const last = logSegments(file)
        .filter((s) => s.rotatedAt !== undefined)
        .at(-1)?.rotatedAt;
      if (last !== undefined && at <= last) at = last + 1;
      const to = rotatedPath(file, at);
      renameSync(file, to);
      return to;
    });
  } catch (error) {
    if (error instanceof LockBusy) return undefined;
    throw error;
  }
}
