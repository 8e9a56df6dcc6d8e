import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import type { BoxEngine } from "../../boundary/box/engine.ts";
import { deploymentLabel } from "../../boundary/box/layout.ts";
import { reapOrphans } from "../../boundary/box/orphans.ts";
import { revokeRunTokens } from "../../boundary/gateway/doors/identity.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { processAlive } from "../../ground/files/process-alive.ts";
import {
  finished,
  listRuns,
  readRecord,
  runDir,
  writeRecord,
} from "../../records/run-records/run-record.ts";
import { allTasks } from "../../records/task-list/store.ts";
import { settleAfterCrash } from "../../work/repos/backstop.ts";
import { finishPending } from "../../work/runs/bookkeeping.ts";
import { settleFromRun } from "../../work/tasks/settle-run.ts";

/**
 * What a server start finds after the last one died (SIGKILL, a crash, the
 * machine going down): boxes whose runner is gone are killed; records still
 * "running" under a dead runner are finished as `crash`; a run that had given
 * its answer and not yet taken its store snapshot (`pending`) has the snapshot
 * taken and its record finished now (docs/runs.md); tasks claimed by
 * such a run are settled as the host attests it (tasks/attest.ts): one that
 * reported is failed, never run again; one that had not goes back to the queue.
 */
/** A worker name or run id as a box's labels carry it: one folder name, nothing else. */
const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export interface Recovery {
  reaped: number;
  crashed: string[];
  /** Runs that had answered when their runner died: snapshot taken, record finished. */
  finished: string[];
  settled: string[];
  requeued: string[];
}

export async function recover(engine: BoxEngine, paths: RosterPaths): Promise<Recovery> {
  const reaped = await reapOrphans(engine, deploymentLabel(paths.state));
  // a ready box (docs/ready-boxes.md) never had a run: its token and folder go with it
  for (const orphan of reaped) {
    if (!SAFE_NAME.test(orphan.worker) || !SAFE_NAME.test(orphan.runId)) continue;
    const dir = runDir(paths.state, orphan.worker, orphan.runId);
    if (existsSync(join(dir, "run.json"))) continue;
    await revokeRunTokens(paths.identity, orphan.runId);
    await rm(dir, { recursive: true, force: true });
  }
  const crashed: string[] = [];
  const completed: string[] = [];
  for (const run of listRuns(paths.state)) {
    const record = readRecord(run.dir);
    if (record?.state !== "running" && !record?.pending) continue;
    const alive = record.runner_pid !== undefined && processAlive(record.runner_pid);
    if (alive) continue;
    if (record.pending) {
      // its box had exited and its answer gone out: only the bookkeeping was left
      // (what the pass says is in the run's store-changes.txt)
      await finishPending(paths, run.dir, record, () => undefined);
      await revokeRunTokens(paths.identity, run.id);
      completed.push(run.id);
      continue;
    }
    await writeRecord(
      run.dir,
      finished(
        await settleAfterCrash(engine, paths, record, run.dir),
        "crash",
        undefined,
        "its runner died mid-run; the box was killed when the server started again",
      ),
    );
    await revokeRunTokens(paths.identity, run.id);
    crashed.push(run.id);
  }

  const done: string[] = [];
  const requeued: string[] = [];
  const claimed = allTasks(paths, undefined, { live: true }).filter(
    (task) => task.state === "claimed",
  );
  for (const task of claimed) {
    const run = task.run_id
      ? readRecord(listRuns(paths.state, task.worker).find((r) => r.id === task.run_id)?.dir ?? "")
      : undefined;
    // a run that is still governed (its runner alive) keeps its task
    if (run?.state === "running") continue;
    // settled as the host attests it (tasks/attest.ts): a run that crashed failed, whatever it
    // reported (so a task that reported done is never run again); one that had not is requeued
    const settled = await settleFromRun(
      paths,
      task.worker,
      task.run_id ?? "",
      (t) => t.id === task.id && t.state === "claimed",
    );
    if (settled?.attestation.state === "pending") requeued.push(task.id);
    else if (settled) done.push(task.id);
  }
  return { reaped: reaped.length, crashed, finished: completed, settled: done, requeued };
}
