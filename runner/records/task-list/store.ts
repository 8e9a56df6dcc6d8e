import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_CEILING_MIN } from "../../ground/config/ceiling.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { RosterError } from "../../ground/errors.ts";
import { appendJsonLines } from "../../ground/files/append-line.ts";
import { replaceFileSync } from "../../ground/files/atomic-replace.ts";
import { withFileLock } from "../../ground/files/file-lock.ts";
import { journalFile, readFinished, SETTLED } from "./finished.ts";
import type { Standing, Task, TaskState } from "./task.ts";

export type { Standing, Task, TaskState } from "./task.ts";

/**
 * A worker's task list: data/workers/<w>/tasks/tasks.json, one document with
 * a version number. Every change happens under the list's lock and bumps the
 * version; a change proposed against an older version (set_tasks'
 * `base_version`) is refused, never merged. Dispatch (running due tasks) is
 * the daemon's; this file only keeps the list.
 */
/**
 * A recurring template: each fire files an ordinary pending task. Its cursor
 * (`next_at`) is written in the same change that files the fire's task, so a
 * restart neither fires twice nor skips.
 */
export interface Template {
  /** "r-<hex>"; the heartbeat's is "r-heartbeat". */
  id: string;
  prompt: string;
  /** Exactly one of cron (5 fields, in the org's time zone) and every ("30m"). */
  cron?: string;
  every?: string;
  window?: string;
  ceiling_min: number;
  filed_at: string;
  filed_by: string;
  standing: Standing;
  /** Host-owned (the heartbeat): the worker can neither change nor retire it. */
  system?: boolean;
  /** The next fire, RFC 3339 UTC. */
  next_at: string;
  last_fired_at?: string;
  /** The task its last fire filed (a fire while that one is still open files nothing). */
  last_task_id?: string;
  /**
   * The chat channel of the session that filed it, and the conversations
   * that run carried: each task it fires carries them on, as a task filed
   * there would (its purpose, its origins, the clean-room rule).
   */
  channel?: string;
  context_channels?: string[];
}

export interface TaskList {
  version: number;
  tasks: Task[];
  recurring?: Template[];
}

export const OPEN_STATES: ReadonlySet<TaskState> = new Set(["pending", "claimed"]);

/** A task's standing as filed, or what a task from before standing existed is read as. */
export const standingOf = (task: Pick<Task, "standing" | "filed_by">): Standing =>
  task.standing ?? (task.filed_by.startsWith("cli:") ? "owner" : "proactive");

/** A task's ceiling as filed, or the default; the bound was checked where it came in (config/ceiling.ts). */
export const taskCeiling = (minutes: number | undefined) => minutes ?? DEFAULT_CEILING_MIN;

export const newTaskId = () => `t-${randomBytes(4).toString("hex")}`;

function listFile(paths: RosterPaths, worker: string): string {
  return join(paths.data, "workers", worker, "tasks", "tasks.json");
}

/**
 * The list file alone: what may still run (pending, claimed), what waits for
 * a person (needs-review), the templates and the version. What the server
 * reads every tick.
 */
export function readLive(paths: RosterPaths, worker: string): TaskList {
  const file = listFile(paths, worker);
  if (!existsSync(file)) return { version: 0, tasks: [] };
  return JSON.parse(readFileSync(file, "utf8")) as TaskList;
}

/** The whole list, finished tasks (finished.ts) included, in the order they were filed. */
export function readTasks(paths: RosterPaths, worker: string): TaskList {
  const live = readLive(paths, worker);
  const finished = readFinished(paths, worker);
  if (!finished.size) return live;
  const liveIds = new Set(live.tasks.map((task) => task.id));
  const earlier = [...finished.values()].filter((task) => !liveIds.has(task.id));
  const tasks = [...earlier, ...live.tasks].sort((a, b) => a.filed_at.localeCompare(b.filed_at));
  return { ...live, tasks };
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
  options: ListOptions = {},
): Promise<TaskList> {
  return updateList(
    paths,
    worker,
    (current) => ({ tasks: change(current), recurring: current.recurring ?? [] }),
    options,
  );
}

export interface ListOptions {
  /**
   * false: `change` sees only the live list (readLive) — for the server's own
   * changes to tasks it knows are live, which must not read a worker's history.
   */
  finished?: boolean;
}

/**
 * The same for tasks and templates together; `change` may return undefined
 * for "nothing to change" (no write, the version stays). Tasks that have
 * finished are appended to the journal first (finished.ts), then the list is
 * replaced without them.
 */
export async function updateList(
  paths: RosterPaths,
  worker: string,
  change: (current: TaskList) => Omit<TaskList, "version"> | undefined,
  options: ListOptions = {},
): Promise<TaskList> {
  const file = listFile(paths, worker);
  mkdirSync(join(file, ".."), { recursive: true });
  return withFileLock(`${file}.lock`, `${worker}'s task list`, async () => {
    const live = readLive(paths, worker);
    const finished =
      options.finished === false ? new Map<string, Task>() : readFinished(paths, worker);
    const current = options.finished === false ? live : readTasks(paths, worker);
    const changed = change(current);
    if (!changed) return current;
    const settled = changed.tasks.filter((task) => SETTLED.has(task.state));
    const fresh = settled.filter((task) => {
      const known = finished.get(task.id);
      return !known || JSON.stringify(known) !== JSON.stringify(task);
    });
    appendJsonLines(journalFile(paths, worker), fresh, { file: 0o644, dir: 0o755 });
    const next: TaskList = {
      version: live.version + 1,
      tasks: changed.tasks.filter((task) => !SETTLED.has(task.state)),
      ...(changed.recurring?.length ? { recurring: changed.recurring } : {}),
    };
    replaceFileSync(file, `${JSON.stringify(next, null, 2)}\n`, { mode: 0o644 });
    return { ...next, tasks: changed.tasks };
  });
}

/** Every task of every worker (or one), with its worker, newest first; `live`: the list files only. */
export function allTasks(
  paths: RosterPaths,
  worker?: string,
  options: { live?: boolean } = {},
): Array<Task & { worker: string }> {
  const root = join(paths.data, "workers");
  const workers = worker ? [worker] : existsSync(root) ? readdirSync(root) : [];
  const read = options.live ? readLive : readTasks;
  return workers
    .flatMap((name) => read(paths, name).tasks.map((task) => ({ ...task, worker: name })))
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

/**
 * What a run sees at ~/self/schedule.json: the list's version, its open and
 * blocked tasks, and its recurring templates, each with its next fire.
 */
export function scheduleView(list: TaskList): string {
  const open = list.tasks.filter((task) => OPEN_STATES.has(task.state) || task.state === "blocked");
  const recurring = (list.recurring ?? []).map((template) => ({
    id: template.id,
    prompt: template.prompt,
    ...(template.cron ? { cron: template.cron } : { every: template.every }),
    ...(template.window ? { window: template.window } : {}),
    ceiling_min: template.ceiling_min,
    next_fire: template.next_at,
    ...(template.system ? { host_owned: true } : {}),
  }));
  return `${JSON.stringify({ version: list.version, tasks: open, recurring }, null, 2)}\n`;
}
