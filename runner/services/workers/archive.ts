import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { lockStoreOf, workerDir } from "../../boundary/store/snapshots.ts";
import { StoreLockBusy, withStoreLock } from "../../boundary/store/store-lock.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { refuseUnlessValid, tryConfigChange } from "../../ground/config/trial.ts";
import { workerNameProblem } from "../../ground/config/worker-name.ts";
import { RosterError } from "../../ground/errors.ts";
import { archiveStamp, moveAside } from "../../ground/files/move-aside.ts";
import { liveRuns } from "../../records/run-records/live-runs.ts";

/**
 * `roster worker rm <name>`: a worker leaves the roster, and nothing of it is
 * deleted. Its config folder, its data (store, snapshots, tasks, journal,
 * knowledge repo) and its run records are moved together under
 * data/archive/<name>-<UTC time>/ (config/, data/, runs/), where a person can
 * look or move them back. Refused while a run of it is live or anything holds
 * its store lock (a box writes the store), and when the config without it
 * would be invalid (a connection or an org rule still names it).
 */
export interface ArchivedWorker {
  name: string;
  archive: string;
  /** What was moved: [from, to]. */
  moved: Array<[string, string]>;
}

function refuse(message: string, hint?: string): RosterError {
  return new RosterError(message, { exitCode: 2, ...(hint ? { hint } : {}) });
}

export function archiveDir(paths: RosterPaths, name: string, now = new Date()): string {
  return join(paths.data, "archive", `${name}-${archiveStamp(now)}`);
}

export async function archiveWorker(
  paths: RosterPaths,
  name: string,
  now = new Date(),
): Promise<ArchivedWorker> {
  const bad = workerNameProblem(name);
  if (bad) throw refuse(bad);
  const configDir = join(paths.config, "workers", name);
  if (!existsSync(configDir))
    throw refuse(
      `no worker named "${name}" (${configDir} does not exist)`,
      "roster worker ls lists them",
    );
  const live = liveRuns(paths, name);
  if (live.length)
    throw refuse(
      `${name} has a run going: ${live.join(", ")}; its box writes its store, so nothing was moved`,
      "wait for it to end (roster worker ls), then remove it",
    );
  refuseUnlessValid(
    await tryConfigChange(
      paths.config,
      (root) => rm(join(root, "workers", name), { recursive: true, force: true }),
      { vaultDir: paths.vault },
    ),
    `removing "${name}"`,
  );
  const archive = archiveDir(paths, name, now);
  if (existsSync(archive)) throw refuse(`${archive} already exists; try again in a second`);
  const moves: Array<[string, string]> = [
    [configDir, join(archive, "config")],
    [workerDir(paths, name), join(archive, "data")],
    [join(paths.state, "runs", name), join(archive, "runs")],
  ];
  const store = lockStoreOf(paths, { worker: name });
  const moveAll = async () => {
    const moved: Array<[string, string]> = [];
    try {
      // the config first: from then on no run of it can start
      for (const [from, to] of moves) {
        if (!existsSync(from)) continue;
        await moveAside(from, to);
        moved.push([from, to]);
      }
    } catch (error) {
      // put back what was moved, so the worker is whole where it was
      for (const [from, to] of moved.reverse()) await moveAside(to, from).catch(() => undefined);
      throw error;
    }
    return moved;
  };
  try {
    const moved = existsSync(store) ? await withStoreLock(store, 0, moveAll) : await moveAll();
    return { name, archive, moved };
  } catch (error) {
    if (error instanceof StoreLockBusy)
      throw refuse(
        `${error.message}, though no run of it is recorded as going (a box left by a crashed run?); nothing was moved`,
        "wait for that box to leave the lock, or stop it, then remove the worker",
      );
    throw error;
  }
}
