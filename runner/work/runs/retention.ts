import { existsSync } from "node:fs";
import { chmod, lstat, readdir, rm, stat, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { errorMessage } from "../../ground/errors.ts";
import { diskUsage } from "../../ground/files/disk-usage.ts";
import { listRuns, readRecord } from "../../records/run-records/run-record.ts";

/**
 * Retention for run folders. A run's $HOME and its repo clones are scratch:
 * what the box left in them is worth a look for a while after the run and
 * nothing after that — its commits are already kept in the canonical repo
 * (repos/backstop.ts), its store is the worker's. So once a run has ended
 * for longer than `[store] scratch_keep` (or `roster runs prune
 * --older-than`), its `home/` and `repos/` go; everything else in the folder
 * stays: run.json, outcome.json, prompt/, the logs, store-changes.txt,
 * run-context.json, self/. `roster runs`, the console's run pages, attested
 * outcomes and `roster runs show` read only those. A run still going (its
 * record says running, a crashed one included until its next start settles
 * it) is never touched.
 */
export const SCRATCH = ["home", "repos"] as const;
/** Left in a pruned run's folder: what went, when, and why. */
export const SCRATCH_NOTE = "scratch-dropped.txt";
/** The automatic pass runs at most this often per deployment (run starts are frequent). */
export const AUTO_PRUNE_EVERY_MS = 3_600_000;
/** Beside state/runs/, never in it: every name in it is a worker's. */
const STAMP = "runs-pruned.stamp";

export interface PrunedRun {
  worker: string;
  id: string;
  ended_at: string;
  /** Bytes on disk the dropped folders held. */
  freed: number;
  dropped: string[];
}

export interface PruneResult {
  pruned: PrunedRun[];
  freed: number;
  /** Runs whose scratch could not be dropped, and why (the pass goes on past each). */
  failed: Array<{ worker: string; id: string; error: string }>;
}

export async function pruneRuns(options: {
  paths: RosterPaths;
  olderThanMs: number;
  worker?: string;
  now?: Date;
  /** Why, in the note left behind: "roster runs prune" or "[store] scratch_keep". */
  by: string;
}): Promise<PruneResult> {
  const now = options.now ?? new Date();
  const result: PruneResult = { pruned: [], freed: 0, failed: [] };
  for (const run of listRuns(options.paths.state, options.worker)) {
    const present = SCRATCH.filter((name) => existsSync(join(run.dir, name)));
    if (!present.length) continue;
    const record = readRecord(run.dir);
    if (!record || record.state === "running") continue;
    const ended = record.ended_at ?? record.started_at;
    const endedMs = Date.parse(ended);
    if (!Number.isFinite(endedMs) || now.getTime() - endedMs < options.olderThanMs) continue;
    try {
      const paths = present.map((name) => join(run.dir, name));
      const freed = (await diskUsage(paths)).reduce((sum, size) => sum + size, 0);
      for (const path of paths) await removeTree(path);
      await writeFile(
        join(run.dir, SCRATCH_NOTE),
        `${now.toISOString()}: ${present.map((name) => `${name}/`).join(" and ")} dropped by ${options.by}, ${freed} bytes, the run having ended ${ended}\n`,
        { mode: 0o644 },
      );
      result.pruned.push({
        worker: run.worker,
        id: run.id,
        ended_at: ended,
        freed,
        dropped: present,
      });
      result.freed += freed;
    } catch (error) {
      result.failed.push({ worker: run.worker, id: run.id, error: errorMessage(error) });
    }
  }
  return result;
}

/**
 * The pass each run start asks for: at most once an hour for the whole
 * deployment (a stamp file's age says when the last began), so a busy host
 * pays one stat per run. Never fails a run: a failure is a note.
 */
export async function autoPrune(
  paths: RosterPaths,
  keepMs: number,
  note: (text: string) => void,
): Promise<void> {
  const stamp = join(paths.state, STAMP);
  const last = await stat(stamp).then(
    (stats) => stats.mtimeMs,
    () => 0,
  );
  const now = new Date();
  if (now.getTime() - last < AUTO_PRUNE_EVERY_MS) return;
  try {
    // stamped first: a second start in the meantime does not run the same pass again
    await writeFile(stamp, "").catch(() => undefined);
    await utimes(stamp, now, now).catch(() => undefined);
    const result = await pruneRuns({ paths, olderThanMs: keepMs, now, by: "[store] scratch_keep" });
    for (const failed of result.failed)
      note(`warning: could not drop the scratch of run ${failed.id}: ${failed.error}`);
  } catch (error) {
    note(`warning: the run folders' retention pass failed: ${errorMessage(error)}`);
  }
}

/**
 * Removes a tree a box wrote. The box ran as this user (or root hands it the
 * tree), so it may have taken write or search permission off its own
 * folders: those are given back before a second try. lstat throughout, so a
 * symlink is removed itself and never followed.
 */
async function removeTree(path: string): Promise<void> {
  try {
    await rm(path, { recursive: true, force: true });
  } catch {
    await openFolders(path);
    await rm(path, { recursive: true, force: true });
  }
}

async function openFolders(dir: string): Promise<void> {
  const stats = await lstat(dir).catch(() => undefined);
  if (!stats?.isDirectory()) return;
  await chmod(dir, 0o700);
  for (const entry of await readdir(dir, { withFileTypes: true }))
    if (entry.isDirectory()) await openFolders(join(dir, entry.name));
}
