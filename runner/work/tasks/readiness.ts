import type { LimitStanding } from "../../boundary/gateway/spend/budget.ts";
import { standingOf, type Task } from "../../records/task-list/store.ts";
import { inWindow } from "./schedule.ts";

/**
 * Whether a pending task may start now, and if not, why: not before its
 * `at`; outside its window; a task it depends on not done yet (or failed,
 * cancelled or blocked, which blocks it for good, with that reason); or, for
 * a proactive task, a budget limit at or above the soft stop. Pure; the
 * dispatcher writes blocks and waiting notes back.
 */
export type Readiness =
  | { kind: "ready" }
  /** Not yet; `note` (when there is one) goes on the task so `task ls` says why. */
  | { kind: "wait"; note?: string }
  | { kind: "block"; note: string };

export const DEFAULT_SOFT_STOP = 0.8;

export interface Pressure {
  /** The first limit at or above the soft stop, for the note. */
  limit: LimitStanding;
  softStop: number;
}

/** The first of a worker's limits that stands at or above `softStop` of its max. */
export function budgetPressure(standing: LimitStanding[], softStop: number): Pressure | undefined {
  const limit = standing.find((one) => one.max > 0 && one.used >= softStop * one.max);
  return limit ? { limit, softStop } : undefined;
}

const percent = (share: number) => `${Math.round(share * 100)}%`;

/** A dependency's state by id: the live list, then the finished journal. */
export type Lookup = (id: string) => Pick<Task, "state" | "note"> | undefined;

export function readiness(
  task: Task,
  find: Lookup,
  now: Date,
  zone: string,
  pressure: () => Pressure | undefined,
): Readiness {
  if (task.at && Date.parse(task.at) > now.getTime()) return { kind: "wait" };
  if (!inWindow(task.window, now, zone)) return { kind: "wait" };
  for (const id of task.depends_on ?? []) {
    const dependency = find(id);
    if (!dependency) return { kind: "block", note: `blocked: ${id} is no longer on the list` };
    if (["failed", "cancelled", "blocked"].includes(dependency.state))
      return {
        kind: "block",
        note: `blocked: ${id} ${dependency.state === "blocked" ? "is blocked" : dependency.state}${dependency.note ? ` (${dependency.note})` : ""}`,
      };
    if (dependency.state !== "done")
      return { kind: "wait", note: `waiting for ${id} (${dependency.state})` };
  }
  if (standingOf(task) === "proactive") {
    const over = pressure();
    if (over) {
      const { limit, softStop } = over;
      return {
        kind: "wait",
        note: `waiting: budget ${limit.scope} ${limit.currency}/${limit.window} at ${percent(limit.used / limit.max)} of its limit (proactive tasks wait from ${percent(softStop)}; it resets ${limit.resets_at})`,
      };
    }
  }
  return { kind: "ready" };
}

/**
 * A cycle among tasks' depends_on, as the ids around it ("t-a → t-b → t-a"),
 * or undefined. Filing refuses a list that has one.
 */
export function findCycle(tasks: Array<Pick<Task, "id" | "depends_on">>): string[] | undefined {
  const edges = new Map(tasks.map((task) => [task.id, task.depends_on ?? []]));
  const state = new Map<string, "visiting" | "done">();
  const path: string[] = [];
  const visit = (id: string): string[] | undefined => {
    if (state.get(id) === "done") return undefined;
    if (state.get(id) === "visiting") return [...path.slice(path.indexOf(id)), id];
    state.set(id, "visiting");
    path.push(id);
    for (const next of edges.get(id) ?? []) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(id, "done");
    return undefined;
  };
  for (const task of tasks) {
    const cycle = visit(task.id);
    if (cycle) return cycle;
  }
  return undefined;
}

/** Why a set of depends_on can't be filed, or undefined: unknown ids, or a cycle. */
export function dependencyProblem(
  tasks: Array<Pick<Task, "id" | "depends_on">>,
  known: ReadonlySet<string>,
): string | undefined {
  for (const task of tasks)
    for (const id of task.depends_on ?? [])
      if (!known.has(id)) return `${task.id} depends on ${id}, which is not on the list`;
  const cycle = findCycle(tasks);
  return cycle ? `depends_on makes a cycle: ${cycle.join(" → ")}` : undefined;
}
