import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_CEILING_MIN } from "../config/ceiling.ts";
import type { RosterPaths } from "../config/paths.ts";
import { RosterError } from "../errors.ts";
import { replaceFileSync } from "../files/atomic-replace.ts";
import { withFileLock } from "../files/file-lock.ts";

/**
 * A worker's task list: data/workers/<w>/tasks/tasks.json, one document with
 * a version number. Every change happens under the list's lock and bumps the
 * version; a change proposed against an older version (set_tasks'
 * `base_version`) is refused, never merged. Dispatch (running due tasks) is
 * the daemon's; this file only keeps the list.
 */
export type TaskState = "pending" | "claimed" | "done" | "failed" | "needs-review";

export interface Task {
  id: string;
  prompt: string;
  ceiling_min: number;
  /** Not before this time (RFC 3339, UTC). */
  at?: string;
  state: TaskState;
  filed_at: string;
  /** "cli:<user>", or "run:<id>" when a worker filed it. */
  filed_by: string;
  /** The run that has it (claimed) or last had it. */
  run_id?: string;
  claimed_at?: string;
  finished_at?: string;
  /** The run's own words on how it ended (task_complete / task_fail), or why it was requeued. */
  note?: string;
}

export interface TaskList {
  version: number;
  tasks: Task[];
}

/** A task's ceiling as filed, or the default; the bound was checked where it came in (config/ceiling.ts). */
export const taskCeiling = (minutes: number | undefined) => minutes ?? DEFAULT_CEILING_MIN;

export const newTaskId = () => `t-${randomBytes(4).toString("hex")}`;

function listFile(paths: RosterPaths, worker: string): string {
  return join(paths.data, "workers", worker, "tasks", "tasks.json");
}

export function readTasks(paths: RosterPaths, worker: string): TaskList {
  const file = listFile(paths, worker);
  if (!existsSync(file)) return { version: 0, tasks: [] };
  return JSON.parse(readFileSync(file, "utf8")) as TaskList;
}

/**
 * Changes the list under its lock: `change` gets the current list and returns
 * the new tasks (or throws a RosterError saying why not). Written fsynced,
 * then renamed; the version goes up by one.
 */
export async function updateTasks(
  paths: RosterPaths,
  worker: string,
  change: (current: TaskList) => Task[],
): Promise<TaskList> {
  const file = listFile(paths, worker);
  mkdirSync(join(file, ".."), { recursive: true });
  return withFileLock(`${file}.lock`, `${worker}'s task list`, async () => {
    const current = readTasks(paths, worker);
    const next: TaskList = { version: current.version + 1, tasks: change(current) };
    replaceFileSync(file, `${JSON.stringify(next, null, 2)}\n`, { mode: 0o644 });
    return next;
  });
}

/** Every task of every worker (or one), with its worker, newest first. */
export function allTasks(paths: RosterPaths, worker?: string): Array<Task & { worker: string }> {
  const root = join(paths.data, "workers");
  const workers = worker ? [worker] : existsSync(root) ? readdirSync(root) : [];
  return workers
    .flatMap((name) => readTasks(paths, name).tasks.map((task) => ({ ...task, worker: name })))
    .sort((a, b) => b.filed_at.localeCompare(a.filed_at));
}

export function findTask(paths: RosterPaths, prefix: string): Task & { worker: string } {
  const wanted = prefix.startsWith("t-") ? prefix : `t-${prefix}`;
  const matches = allTasks(paths).filter((task) => task.id.startsWith(wanted));
  if (matches.length === 1 && matches[0]) return matches[0];
  throw new RosterError(
    matches.length
      ? `task id "${prefix}" is ambiguous: ${matches.map((task) => task.id).join(", ")}`
      : `no task "${prefix}" (roster task ls lists them)`,
    { exitCode: 2 },
  );
}

/** What a run sees at ~/self/schedule.json: the list's version and its open tasks. */
export function scheduleView(list: TaskList): string {
  const open = list.tasks.filter((task) => task.state === "pending" || task.state === "claimed");
  return `${JSON.stringify({ version: list.version, tasks: open }, null, 2)}\n`;
}
