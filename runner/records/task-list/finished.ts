import { closeSync, existsSync, openSync, readFileSync, readSync, statSync } from "node:fs";
import { join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import type { Task, TaskState } from "./task.ts";

/**
 * Finished tasks leave the list for a journal beside it
 * (data/workers/<w>/tasks/finished.jsonl, one task per line, the newest line
 * of an id winning), so the list the server reads every tick holds only what
 * may still run and doesn't grow with a worker's history. `task ls` reads
 * the whole journal; the dispatcher only ever needs a finished task's state
 * (for depends_on), and reads the journal incrementally: only the bytes
 * appended since it last looked.
 */
export const SETTLED: ReadonlySet<TaskState> = new Set(["done", "failed", "cancelled", "blocked"]);

export function journalFile(paths: RosterPaths, worker: string): string {
  return join(paths.data, "workers", worker, "tasks", "finished.jsonl");
}

function parseLines(text: string, into: (task: Task) => void): void {
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    try {
      into(JSON.parse(line) as Task);
    } catch {
      // a torn last line (a crash mid-append) is skipped; the list still had the task
    }
  }
}

/** Every finished task, the newest line of each id. */
export function readFinished(paths: RosterPaths, worker: string): Map<string, Task> {
  const file = journalFile(paths, worker);
  const tasks = new Map<string, Task>();
  if (!existsSync(file)) return tasks;
  parseLines(readFileSync(file, "utf8"), (task) => tasks.set(task.id, task));
  return tasks;
}

export type FinishedState = Pick<Task, "state" | "note">;

interface Cursor {
  inode: number;
  offset: number;
  states: Map<string, FinishedState>;
}
const cursors = new Map<string, Cursor>();

/**
 * A finished task's state and note by id, read on from where the last call
 * stopped (a replaced or truncated journal is read again from the start).
 * Only complete lines are taken; a line still being written waits for the
 * next call.
 */
export function finishedStates(paths: RosterPaths, worker: string): Map<string, FinishedState> {
  const file = journalFile(paths, worker);
  let stat: ReturnType<typeof statSync>;
  try {
    stat = statSync(file);
  } catch {
    cursors.delete(file);
    return new Map();
  }
  let cursor = cursors.get(file);
  if (!cursor || cursor.inode !== stat.ino || stat.size < cursor.offset) {
    cursor = { inode: stat.ino, offset: 0, states: new Map() };
    cursors.set(file, cursor);
  }
  if (stat.size === cursor.offset) return cursor.states;
  const length = stat.size - cursor.offset;
  const bytes = Buffer.alloc(length);
  const fd = openSync(file, "r");
  try {
    readSync(fd, bytes, 0, length, cursor.offset);
  } finally {
    closeSync(fd);
  }
  const complete = bytes.lastIndexOf(0x0a) + 1;
  const states = cursor.states;
  parseLines(bytes.subarray(0, complete).toString("utf8"), (task) =>
    states.set(task.id, { state: task.state, ...(task.note ? { note: task.note } : {}) }),
  );
  cursor.offset += complete;
  return states;
}
