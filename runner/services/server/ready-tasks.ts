import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { Budgets } from "../../boundary/gateway/spend/budget.ts";
import type { LoadedConfig } from "../../ground/config/load.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { workerSubject } from "../../ground/config/subject.ts";
import { scheduleZone } from "../../ground/config/time-zone.ts";
import { finishedStates } from "../../records/task-list/finished.ts";
import { readLive, standingOf, type Task, updateTasks } from "../../records/task-list/store.ts";
import { pauseOf } from "../../records/workers/pause.ts";
import {
  budgetPressure,
  DEFAULT_SOFT_STOP,
  type Pressure,
  type Readiness,
  readiness,
} from "../../work/tasks/readiness.ts";

/**
 * The tasks that may start now across every worker, the owner's (what a
 * person asked for) before the worker's own, each oldest filed first
 * (tasks/readiness.ts says which). A task a failed dependency blocks is
 * marked blocked, and a waiting task's note says what it waits for; those
 * are written back only when they change, so a quiet tick writes nothing.
 */
export async function readyTasks(
  paths: RosterPaths,
  config: LoadedConfig,
  now: Date,
): Promise<Array<{ worker: string; task: Task }>> {
  const root = join(paths.data, "workers");
  if (!existsSync(root)) return [];
  const zone = scheduleZone(config.org);
  const softStop = config.org.budget?.soft_stop ?? DEFAULT_SOFT_STOP;
  let budgets: Budgets | undefined;
  const ready: Array<{ worker: string; task: Task }> = [];
  for (const worker of readdirSync(root).sort()) {
    // a paused worker's tasks wait as they are, neither started nor blocked
    if (pauseOf(paths, worker)) continue;
    let list: ReturnType<typeof readLive>;
    try {
      list = readLive(paths, worker);
    } catch {
      continue;
    }
    const live = new Map(list.tasks.map((task) => [task.id, task]));
    // a dependency that has left the list is in the journal, read only from where it was last read
    const find = (id: string) => live.get(id) ?? finishedStates(paths, worker).get(id);
    // the budget is read only when a proactive task would otherwise start, and once per worker
    let pressure: Pressure | undefined | null = null;
    const pressureNow = () => {
      if (pressure !== null) return pressure;
      budgets ??= new Budgets(
        paths.audit,
        config.meters,
        config.limits,
        config.org.budget?.price ?? [],
      );
      pressure = budgetPressure(budgets.standing(workerSubject(worker), now.getTime()), softStop);
      return pressure;
    };
    const changes = new Map<string, Readiness>();
    for (const task of list.tasks) {
      if (task.state !== "pending") continue;
      const verdict = readiness(task, find, now, zone, pressureNow);
      if (verdict.kind === "ready") ready.push({ worker, task });
      else if (verdict.kind === "block" || (verdict.note && verdict.note !== task.note))
        changes.set(task.id, verdict);
    }
    if (changes.size)
      await updateTasks(paths, worker, (current) =>
        current.tasks.map((task) => {
          const verdict = changes.get(task.id);
          if (!verdict || task.state !== "pending") return task;
          return verdict.kind === "block"
            ? { ...task, state: "blocked", note: verdict.note, finished_at: now.toISOString() }
            : {
                ...task,
                ...(verdict.kind === "wait" && verdict.note ? { note: verdict.note } : {}),
              };
        }),
      );
  }
  // owner tasks first (what a person asked for), each kind oldest first
  const rank = (task: Task) => (standingOf(task) === "owner" ? 0 : 1);
  return ready.sort(
    (a, b) => rank(a.task) - rank(b.task) || a.task.filed_at.localeCompare(b.task.filed_at),
  );
}
