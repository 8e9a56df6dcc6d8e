import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Static, Type } from "@sinclair/typebox";
import { ceilingProblem } from "../../config/ceiling.ts";
import { RosterError } from "../../errors.ts";
import {
  newTaskId,
  readTasks,
  scheduleView,
  type Task,
  type TaskList,
  taskCeiling,
  updateTasks,
} from "../../tasks/store.ts";
import { oneLine } from "./chat-text.ts";
import type { ExecutionContext, Executor } from "./executor.ts";

/**
 * task (file_task): one more task on the worker's own list. task-list
 * (set_tasks): the worker's pending tasks replaced as a whole, against the
 * version it read (~/self/schedule.json) — a list that changed since is
 * refused, never merged; claimed or finished tasks are not the worker's to
 * change. After either, the proposing run's schedule.json is rewritten in
 * place (same file, so the read-only bind in the box sees it).
 */
const At = Type.String({
  pattern: "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2}(\\.\\d+)?)?Z$",
  description: "not before this time, RFC 3339 in UTC (ending in Z)",
});
const TaskFields = {
  prompt: Type.String({ minLength: 1, maxLength: 24_000 }),
  // bounded by config/ceiling.ts in each precheck: the same words as every other path
  ceiling_min: Type.Optional(Type.Number()),
  at: Type.Optional(At),
};
const FilePayload = Type.Object(TaskFields, { additionalProperties: false });
type FilePayload = Static<typeof FilePayload>;

const SetPayload = Type.Object(
  {
    base_version: Type.Integer({ minimum: 0 }),
    tasks: Type.Array(
      Type.Object(
        { id: Type.Optional(Type.String({ pattern: "^t-[0-9a-f]{8}$" })), ...TaskFields },
        { additionalProperties: false },
      ),
      { maxItems: 100 },
    ),
  },
  { additionalProperties: false },
);
type SetPayload = Static<typeof SetPayload>;

function refreshView(context: ExecutionContext, list: TaskList): void {
  if (!context.runId) return;
  const file = join(
    context.paths.state,
    "runs",
    context.worker,
    context.runId,
    "self",
    "schedule.json",
  );
  if (existsSync(file)) writeFileSync(file, scheduleView(list));
}

const problemAt = (field: string, problem: string | undefined) =>
  problem ? `${field}: ${problem}` : undefined;

const fromRun = (context: ExecutionContext) => (context.runId ? `run:${context.runId}` : "action");

export const fileTask: Executor<FilePayload> = {
  schema: FilePayload,
  summary: (payload) =>
    `new task${payload.at ? ` at ${payload.at}` : ""}: ${oneLine(payload.prompt, 70)}`,
  precheck: (payload) =>
    payload.ceiling_min === undefined
      ? undefined
      : problemAt("payload.ceiling_min", ceilingProblem(payload.ceiling_min)),
  render: (payload) =>
    `ceiling: ${taskCeiling(payload.ceiling_min)} min${payload.at ? `\nnot before: ${payload.at}` : ""}\n\n${payload.prompt}`,
  async run(payload, context) {
    const task: Task = {
      id: newTaskId(),
      prompt: payload.prompt,
      ceiling_min: taskCeiling(payload.ceiling_min),
      ...(payload.at ? { at: payload.at } : {}),
      state: "pending",
      filed_at: new Date().toISOString(),
      filed_by: fromRun(context),
    };
    const list = await updateTasks(context.paths, context.worker, (current) => [
      ...current.tasks,
      task,
    ]);
    refreshView(context, list);
    return { task_id: task.id, state: task.state, version: list.version };
  },
};

export const setTasks: Executor<SetPayload> = {
  schema: SetPayload,
  summary: (payload) =>
    `replace its pending tasks with ${payload.tasks.length} (against version ${payload.base_version})`,
  render: (payload) =>
    payload.tasks
      .map(
        (task, index) =>
          `${index + 1}. ${task.id ?? "(new)"} ${task.at ? `at ${task.at} ` : ""}— ${task.prompt}`,
      )
      .join("\n") || "(no pending tasks)",
  precheck: (payload, context) => {
    for (const [index, task] of payload.tasks.entries()) {
      const problem = task.ceiling_min === undefined ? undefined : ceilingProblem(task.ceiling_min);
      if (problem) return `payload.tasks.${index}.ceiling_min: ${problem}`;
    }
    const current = readTasks(context.paths, context.worker);
    return current.version === payload.base_version
      ? undefined
      : `payload.base_version: the task list is at version ${current.version} now, not ${payload.base_version}; read ~/self/schedule.json again`;
  },
  async run(payload, context) {
    const list = await updateTasks(context.paths, context.worker, (current) => {
      if (current.version !== payload.base_version)
        throw new RosterError(
          `the task list is at version ${current.version} now, not ${payload.base_version}; nothing was changed`,
        );
      const byId = new Map(current.tasks.map((task) => [task.id, task]));
      const kept = current.tasks.filter((task) => task.state !== "pending");
      const pending = payload.tasks.map((entry): Task => {
        const existing = entry.id ? byId.get(entry.id) : undefined;
        if (entry.id && !existing)
          throw new RosterError(`no task ${entry.id} on the list; nothing was changed`);
        if (existing && existing.state !== "pending")
          throw new RosterError(
            `task ${existing.id} is ${existing.state}: not yours to change; nothing was changed`,
          );
        return {
          id: existing?.id ?? newTaskId(),
          prompt: entry.prompt,
          ceiling_min: taskCeiling(entry.ceiling_min),
          ...(entry.at ? { at: entry.at } : {}),
          state: "pending",
          filed_at: existing?.filed_at ?? new Date().toISOString(),
          filed_by: existing?.filed_by ?? fromRun(context),
        };
      });
      return [...kept, ...pending];
    });
    refreshView(context, list);
    return { status: "ok", version: list.version };
  },
};
