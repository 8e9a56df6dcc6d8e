import type { RosterPaths } from "../../ground/config/paths.ts";
import { type RetentionSection, retentionPolicy } from "../../ground/config/retention.ts";
import { compressSettled } from "../../ground/files/rotation/compress.ts";
import { pruneSegments } from "../../ground/files/rotation/prune.ts";
import {
  type RetentionPolicy,
  rotateIfDue,
  SETTLE_MS,
} from "../../ground/files/rotation/rotate.ts";
import { logSegments } from "../../ground/files/rotation/segments.ts";
import { type GrowingLog, growingLogs } from "./logs.ts";

/** What one sweep did to one log. */
export interface SweptLog {
  file: string;
  rotated?: string;
  compressed: number;
  deleted: number;
  error?: string;
}

export interface SweepOptions {
  now?: number;
  /** How long a rotated file waits before it is gzipped (SETTLE_MS; tests make it small). */
  settleMs?: number;
}

const policyOf = (section: RetentionSection | undefined, log: GrowingLog): RetentionPolicy =>
  retentionPolicy(section, log.kind, log.floorMs);

/**
 * One pass over every growing log: rotate the live file when it is due,
 * gzip the rotated files that have settled, delete what retention no longer
 * keeps. Each log on its own: one that fails (a full disk, a file someone
 * chmod'ed) is reported and the rest still swept. Run by the server on a
 * timer and by a run started without one (services/retention).
 */
export async function sweepLogs(
  paths: RosterPaths,
  section: RetentionSection | undefined,
  options: SweepOptions = {},
): Promise<SweptLog[]> {
  const swept: SweptLog[] = [];
  for (const log of growingLogs(paths)) {
    const now = options.now ?? Date.now();
    const policy = policyOf(section, log);
    const outcome: SweptLog = { file: log.file, compressed: 0, deleted: 0 };
    try {
      const rotated = await rotateIfDue(log.file, policy, now);
      if (rotated) outcome.rotated = rotated;
      outcome.compressed = (
        await compressSettled(log.file, options.settleMs ?? SETTLE_MS, now)
      ).length;
      outcome.deleted = pruneSegments(log.file, policy, now).length;
    } catch (error) {
      outcome.error = error instanceof Error ? error.message : String(error);
    }
    if (outcome.rotated || outcome.compressed || outcome.deleted || outcome.error)
      swept.push(outcome);
  }
  return swept;
}

/** One log as `roster doctor` shows it: what it holds now and what retention keeps. */
export interface LogStanding {
  file: string;
  kind: GrowingLog["kind"];
  liveBytes: number;
  rotatedFiles: number;
  rotatedBytes: number;
  policy: RetentionPolicy;
}

export function logStandings(
  paths: RosterPaths,
  section: RetentionSection | undefined,
): LogStanding[] {
  return growingLogs(paths).flatMap((log) => {
    const segments = logSegments(log.file);
    if (segments.length === 0) return [];
    const rotated = segments.filter((s) => s.rotatedAt !== undefined);
    return [
      {
        file: log.file,
        kind: log.kind,
        liveBytes: segments.find((s) => s.rotatedAt === undefined)?.bytes ?? 0,
        rotatedFiles: rotated.length,
        rotatedBytes: rotated.reduce((sum, s) => sum + s.bytes, 0),
        policy: policyOf(section, log),
      },
    ];
  });
}
