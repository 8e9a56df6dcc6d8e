import { existsSync } from "node:fs";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { RosterError } from "../../ground/errors.ts";
import { liveRuns } from "../../records/run-records/live-runs.ts";
import { findRun, readRecord } from "../../records/run-records/run-record.ts";
import { storeRsync } from "./rsync.ts";
import {
  describeTarget,
  listSnapshots,
  lockStoreOf,
  rotateSnapshots,
  type SnapshotMeta,
  type StoreTarget,
  snapshotLocked,
  snapshotsDir,
  snapshotsToKeep,
  storeDir,
} from "./snapshots.ts";
import { withStartLock } from "./start-lock.ts";
import { StoreLockBusy, withStoreLock } from "./store-lock.ts";

/**
 * `roster worker restore`: puts a snapshot back into a store. Always undoable:
 * under the store lock, the store as it is now is snapshotted first (or found
 * equal to the newest snapshot), so restoring that one undoes this. Refused
 * while a run of the worker is live (its box writes the store) or while
 * anything holds the store lock; the whole copy holds the worker's start
 * lock, so no run starts until it is done. The copy back never hard-links: a store file
 * a box later changes in place must not change a snapshot with it.
 */
function refuse(message: string, hint?: string): RosterError {
  return new RosterError(message, { exitCode: 2, ...(hint ? { hint } : {}) });
}

export interface RestoreChoice {
  /** A snapshot by name (or a unique prefix of it). */
  from?: string;
  /** The store as it was before this run (an id or a unique prefix). */
  before?: string;
}

export interface RestoreResult {
  target: StoreTarget;
  restored: SnapshotMeta;
  /** The snapshot holding the store as it was just before: restoring it undoes this. */
  undo: string | undefined;
  /** Paths no snapshot holds (skipped by the pass), left in the store as they were. */
  kept: string[];
}

/** An rsync filter pattern matching exactly this path (its wildcards taken literally). */
const escapePattern = (path: string) => path.replace(/[[*?\\]/g, "\\$&");

/** A run start holds the start lock only while it writes its first record. */
const RESTORE_WAITS_FOR_START_MS = 10_000;

/** The copy itself, both locks held: the store as it is is kept first, then the snapshot goes back. */
async function copyBack(
  paths: RosterPaths,
  target: StoreTarget,
  chosen: SnapshotMeta,
): Promise<RestoreResult> {
  const store = storeDir(paths, target);
  const now = await snapshotLocked(paths, target, { reason: "before-restore" });
  // what no snapshot can hold (a fifo, a file over the cap) would be lost for
  // good if --delete removed it: it stays in place, and the result says so
  const kept = now.changes.skipped.map((entry) => entry.path);
  const keepFile = join(snapshotsDir(paths, target), `.restore-keep-${process.pid}`);
  try {
    await writeFile(keepFile, kept.map((path) => `/${escapePattern(path)}\n`).join(""));
    await storeRsync(
      [
        "--delete",
        // every file copied whatever its size and time say: a restore is byte for byte
        "--ignore-times",
        `--exclude-from=${keepFile}`,
      ],
      { from: `${join(snapshotsDir(paths, target), chosen.name)}/`, toStore: store },
    );
  } finally {
    await rm(keepFile, { force: true });
  }
  return { target, restored: chosen, undo: now.current, kept };
}

/** The snapshot a restore puts back, chosen as the options say. */
export function chooseSnapshot(
  paths: RosterPaths,
  target: StoreTarget,
  choice: RestoreChoice,
): SnapshotMeta {
  const all = listSnapshots(paths, target);
  const where = snapshotsDir(paths, target);
  if (all.length === 0)
    throw refuse(`${describeTarget(target)} has no snapshots yet (${where} is empty)`);
  if (choice.from !== undefined && choice.before !== undefined)
    throw refuse("give --from <snapshot> or --before <run>, not both");
  if (choice.from !== undefined) {
    const prefix = choice.from;
    const matches = all.filter((snapshot) => snapshot.name.startsWith(prefix));
    const only = matches.length === 1 ? matches[0] : undefined;
    if (only) return only;
    throw refuse(
      matches.length
        ? `"${prefix}" matches ${matches.length} snapshots of ${describeTarget(target)}: ${matches.map((s) => s.name).join(", ")}`
        : `${describeTarget(target)} has no snapshot "${prefix}"`,
      "roster worker restore <worker> --list shows them",
    );
  }
  if (choice.before !== undefined) {
    const run = findRun(paths.state, choice.before);
    if ("error" in run) throw refuse(run.error);
    const record = readRecord(run.dir);
    if (!record || record.worker !== target.worker)
      throw refuse(`run ${run.id} is not a run of ${target.worker}`);
    // the newest snapshot made before the run began holds the store as the run found it
    const before = all.filter(
      (snapshot) => snapshot.made_at && snapshot.made_at < record.started_at,
    );
    const found = before.at(-1);
    if (!found)
      throw refuse(
        `${describeTarget(target)} has no snapshot older than run ${record.id} (started ${record.started_at}); the oldest is ${all[0]?.name}`,
      );
    return found;
  }
  const newest = all.at(-1);
  if (!newest) throw refuse(`${describeTarget(target)} has no snapshots yet`);
  return newest;
}

export async function restoreStore(
  paths: RosterPaths,
  target: StoreTarget,
  choice: RestoreChoice,
): Promise<RestoreResult> {
  const store = storeDir(paths, target);
  if (!existsSync(store)) throw refuse(`${describeTarget(target)} does not exist (${store})`);
  // chosen before the current state is snapshotted, so a second restore undoes the first
  const chosen = chooseSnapshot(paths, target, choice);
  // the whole copy holds the worker's start lock: no run starts (a cron fire, a
  // ready box's hand-off) until it is done, and none began since the check below
  const result = await withStartLock(
    paths,
    target.worker,
    "restore",
    { waitMs: RESTORE_WAITS_FOR_START_MS },
    async () => {
      const live = liveRuns(paths, target.worker);
      if (live.length)
        throw refuse(
          `${target.worker} has a run going: ${live.join(", ")}; its box writes the store, so nothing was restored`,
          "wait for it to end (roster runs ls), then restore",
        );
      return withStoreLock(lockStoreOf(paths, target), 0, () =>
        copyBack(paths, target, chosen),
      ).catch((error: unknown) => {
        if (error instanceof StoreLockBusy)
          throw refuse(
            `${error.message}, though no run of it is recorded as going (a box left by a crashed run?); nothing was restored`,
            "wait for that box to leave the lock, or stop it, then restore",
          );
        throw error;
      });
    },
  );
  // rotation after the copy, so it never takes the snapshot being restored
  const keep = snapshotsToKeep(paths);
  if (keep > 0) await rotateSnapshots(paths, target, keep);
  return result;
}
