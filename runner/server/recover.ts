import type { ContainerEngine } from "../box/docker.ts";
import { reapOrphans } from "../box/orphans.ts";
import type { RosterPaths } from "../config/paths.ts";
import { processAlive } from "../files/process-alive.ts";
import { revokeRunTokens } from "../gateway/identity.ts";
import { settleAfterCrash } from "../repos/backstop.ts";
import { finished, listRuns, readRecord, writeRecord } from "../runs/run-record.ts";
import { allTasks, updateTasks } from "../tasks/store.ts";
import { readOutcome, settledState } from "./dispatch.ts";

/**
 * What a server start finds after the last one died (SIGKILL, a crash, the
 * machine going down): boxes whose runner is gone are killed; records still
 * "running" under a dead runner are finished as `crash`; tasks claimed by
 * such a run are settled from the run's own report when it made one (a task
 * that reported done is never run again) and otherwise go back to the queue.
 */
export interface Recovery {
  reaped: number;
  crashed: string[];
  settled: string[];
  requeued: string[];
}

export async function recover(docker: ContainerEngine, paths: RosterPaths): Promise<Recovery> {
  const reaped = await reapOrphans(docker);
  const crashed: string[] = [];
  for (const run of listRuns(paths.state)) {
    const record = readRecord(run.dir);
    if (record?.state !== "running") continue;
    const alive = record.runner_pid !== undefined && processAlive(record.runner_pid);
    if (alive) continue;
    await writeRecord(
      run.dir,
      finished(
        await settleAfterCrash(docker, paths, record, run.dir),
        "crash",
        undefined,
        "its runner died mid-run; the box was killed when the server started again",
      ),
    );
    await revokeRunTokens(paths.identity, run.id);
    crashed.push(run.id);
  }

  const settled: string[] = [];
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
    const outcome = task.run_id ? readOutcome(paths, task.worker, task.run_id) : undefined;
    await updateTasks(paths, task.worker, (list) =>
      list.tasks.map((t) => {
        if (t.id !== task.id) return t;
        if (outcome)
          return {
            ...t,
            state: settledState(outcome),
            finished_at: new Date().toISOString(),
            note: outcome.note,
          };
        return { ...t, state: "pending", note: `requeued: run ${t.run_id ?? "?"} crashed` };
      }),
    );
    (outcome ? settled : requeued).push(task.id);
  }
  return { reaped: reaped.length, crashed, settled, requeued };
}
