import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Static, Type } from "@sinclair/typebox";
import { ceilingProblem } from "../../../ground/config/ceiling.ts";
import { loadConfig } from "../../../ground/config/load.ts";
import { scheduleZone } from "../../../ground/config/time-zone.ts";
import { RosterError } from "../../../ground/errors.ts";
import { oneLine } from "../../../ground/text/message-parts.ts";
import { readRecord, runDir } from "../../../records/run-records/run-record.ts";
import { SETTLED } from "../../../records/task-list/finished.ts";
import {
  newTaskId,
  readLive,
  readTasks,
  type Standing,
  scheduleView,
  type Task,
  type TaskList,
  taskCeiling,
  updateList,
  updateTasks,
} from "../../../records/task-list/store.ts";
import { readRunContext } from "../../../work/runs/run-context.ts";
import { dependencyProblem } from "../../../work/tasks/readiness.ts";
import { applyTemplates, templateProblem } from "../../../work/tasks/template-edit.ts";
import type { ExecutionContext, Executor } from "../../executor.ts";
import { channelTrust, trustedForRun } from "../trusted-channels.ts";
import { taskCleanRoomProblem } from "./task-clean-room.ts";

/**
 * task (file_task): one more task on the worker's own list. task-list
 * (set_tasks): the worker's pending tasks replaced as a whole, against the
 * version it read (~/self/schedule.json) — a list that changed since is
 * refused, never merged; claimed or finished tasks are not the worker's to
 * change. set_tasks' `recurring` replaces the worker's recurring templates
 * the same way (the host's heartbeat is kept and can't be named). A task may
 * wait on others (`depends_on`); an unknown id or a cycle is refused. What
 * the worker files is proactive, unless a session in a trusted channel asked
 * for it (owner standing, as if the operator had). A task filed by a chat
 * session carries its channel (the channel's purpose is in the task's
 * prompt) and, unless `reply_to` is false, its final answer is proposed back
 * there (actions/task-reply.ts). After either, the proposing run's
 * schedule.json is rewritten in place (same file, so the read-only bind in
 * the box sees it).
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
  depends_on: Type.Optional(
    Type.Array(Type.String({ pattern: "^t-[0-9a-f]{8}$" }), { maxItems: 20, uniqueItems: true }),
  ),
  // the answer goes back to the filing session's channel; true by default when there is one
  reply_to: Type.Optional(Type.Boolean()),
};
const TemplateFields = Type.Object(
  {
    // the heartbeat's id passes the pattern so the refusal can say whose it is
    id: Type.Optional(Type.String({ pattern: "^r-[0-9a-z]{1,16}$" })),
    prompt: Type.String({ minLength: 1, maxLength: 24_000 }),
    cron: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    every: Type.Optional(Type.String({ minLength: 1, maxLength: 10 })),
    window: Type.Optional(Type.String({ minLength: 1, maxLength: 11 })),
    ceiling_min: Type.Optional(Type.Number()),
  },
  { additionalProperties: false },
);
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
    recurring: Type.Optional(Type.Array(TemplateFields, { maxItems: 50 })),
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

/** The channel of the chat session that proposes, from its run's record; none for other runs. */
function sessionChannel(context: Omit<ExecutionContext, "key">): string | undefined {
  if (!context.runId) return undefined;
  const record = readRecord(runDir(context.paths.state, context.worker, context.runId));
  return record?.kind === "session" ? record.channel_id : undefined;
}

/** The conversations the proposing run carried: a task it files carries them on (the clean-room rule). */
function carriedFrom(context: Omit<ExecutionContext, "key">): Pick<Task, "context_channels"> {
  if (!context.runId) return {};
  const { channels } = readRunContext(context.paths, context.worker, context.runId);
  return channels.length ? { context_channels: channels } : {};
}

/**
 * Owner when a session asked for it in a trusted channel that is the run's
 * own (every conversation it carried is that channel's, or linked with it:
 * the rule a send there is judged by); the worker's own idea otherwise.
 */
function standingFrom(context: ExecutionContext): Standing {
  const channel = sessionChannel(context);
  if (!channel || !context.runId) return "proactive";
  const { channels } = readRunContext(context.paths, context.worker, context.runId);
  return trustedForRun(channelTrust(context.paths), channel, channels) ? "owner" : "proactive";
}

/** Where a task filed now comes from, and whether its answer goes back there. */
function originFrom(
  context: ExecutionContext,
  replyTo: boolean | undefined,
): Pick<Task, "channel" | "reply_to"> {
  const channel = sessionChannel(context);
  return channel ? { channel, reply_to: replyTo ?? true } : {};
}

/** reply_to: true needs a channel to reply to: the session's that files it, or the one it was filed from. */
function replyProblem(
  entries: Array<{ id?: string | undefined; reply_to?: boolean | undefined }>,
  context: Omit<ExecutionContext, "key">,
  field: (index: number) => string,
  filedFrom: (id: string) => string | undefined = () => undefined,
): string | undefined {
  const index = entries.findIndex(
    (entry) => entry.reply_to === true && !(entry.id && filedFrom(entry.id)),
  );
  if (index < 0 || sessionChannel(context)) return undefined;
  return `${field(index)}: this run is not a chat session and the task was not filed from one, so there is no channel to reply to; leave reply_to out`;
}

const zoneOf = (context: Pick<ExecutionContext, "paths">) =>
  scheduleZone(loadConfig(context.paths.config, { vaultDir: context.paths.vault }).org);

/**
 * A kept task keeps the channel it was filed from (a session elsewhere
 * editing the list does not move it); a new one takes the proposing session's.
 */
function channelOf(
  existing: Task | undefined,
  session: string | undefined,
  replyTo: boolean | undefined,
): Pick<Task, "channel" | "reply_to"> {
  const channel = existing ? existing.channel : session;
  if (!channel) return {};
  return { channel, reply_to: replyTo ?? existing?.reply_to ?? true };
}

/**
 * Unsettled tasks one worker may have at once. A box chooses how many tasks
 * it files, and each becomes a box of its own later: a run filing in a loop
 * (trusted to file unasked) would fill the list and the host's boxes.
 */
export const MAX_UNSETTLED_TASKS = 200;

function tooManyTasks(tasks: readonly Task[], adding: number): string | undefined {
  const unsettled = tasks.filter((task) => !SETTLED.has(task.state)).length;
  return unsettled + adding > MAX_UNSETTLED_TASKS
    ? `the list already has ${unsettled} tasks not yet settled, the most a worker may have (${MAX_UNSETTLED_TASKS}); nothing was filed until some are done`
    : undefined;
}

export const fileTask: Executor<FilePayload> = {
  schema: FilePayload,
  summary: (payload) =>
    `new task${payload.at ? ` at ${payload.at}` : ""}: ${oneLine(payload.prompt, 70)}`,
  precheck: (payload, context) => {
    const problem =
      (payload.ceiling_min === undefined
        ? undefined
        : problemAt("payload.ceiling_min", ceilingProblem(payload.ceiling_min))) ??
      replyProblem([payload], context, () => "payload.reply_to") ??
      taskCleanRoomProblem(context, [["payload.prompt", payload.prompt]]);
    if (problem || !context) return problem;
    const { tasks } = readTasks(context.paths, context.worker);
    const full = tooManyTasks(tasks, 1);
    if (full) return `payload: ${full}`;
    if (!payload.depends_on?.length) return undefined;
    const known = new Set(tasks.map((task) => task.id));
    const missing = payload.depends_on.find((id) => !known.has(id));
    return missing ? `payload.depends_on: ${missing} is not on your task list` : undefined;
  },
  render: (payload) =>
    `ceiling: ${taskCeiling(payload.ceiling_min)} min${payload.at ? `\nnot before: ${payload.at}` : ""}\n\n${payload.prompt}`,
  async run(payload, context) {
    const task: Task = {
      id: newTaskId(),
      prompt: payload.prompt,
      ceiling_min: taskCeiling(payload.ceiling_min),
      ...(payload.at ? { at: payload.at } : {}),
      ...(payload.depends_on?.length ? { depends_on: payload.depends_on } : {}),
      state: "pending",
      filed_at: new Date().toISOString(),
      filed_by: fromRun(context),
      standing: standingFrom(context),
      ...originFrom(context, payload.reply_to),
      ...carriedFrom(context),
    };
    const list = await updateTasks(context.paths, context.worker, (current) => {
      const problem =
        tooManyTasks(current.tasks, 1) ??
        dependencyProblem([task], new Set(current.tasks.map((one) => one.id)));
      if (problem) throw new RosterError(`${problem}; nothing was filed`);
      return [...current.tasks, task];
    });
    refreshView(context, list);
    return { task_id: task.id, state: task.state, version: list.version };
  },
};

export const setTasks: Executor<SetPayload> = {
  schema: SetPayload,
  summary: (payload) =>
    `replace its pending tasks with ${payload.tasks.length}${payload.recurring ? ` and its recurring ones with ${payload.recurring.length}` : ""} (against version ${payload.base_version})`,
  render: (payload) =>
    [
      payload.tasks
        .map(
          (task, index) =>
            `${index + 1}. ${task.id ?? "(new)"} ${task.at ? `at ${task.at} ` : ""}${task.depends_on?.length ? `after ${task.depends_on.join(", ")} ` : ""}— ${task.prompt}`,
        )
        .join("\n") || "(no pending tasks)",
      ...(payload.recurring
        ? [
            "recurring:",
            payload.recurring
              .map(
                (entry) =>
                  `- ${entry.id ?? "(new)"} ${entry.cron ?? `every ${entry.every ?? "?"}`}${entry.window ? ` within ${entry.window}` : ""} — ${entry.prompt}`,
              )
              .join("\n") || "(none)",
          ]
        : []),
    ].join("\n"),
  precheck: (payload, context) => {
    for (const [index, task] of payload.tasks.entries()) {
      const problem = task.ceiling_min === undefined ? undefined : ceilingProblem(task.ceiling_min);
      if (problem) return `payload.tasks.${index}.ceiling_min: ${problem}`;
    }
    for (const [index, entry] of (payload.recurring ?? []).entries()) {
      const problem = templateProblem(entry, `payload.recurring.${index}`);
      if (problem) return problem;
    }
    const current = readLive(context.paths, context.worker);
    const reply = replyProblem(
      payload.tasks,
      context,
      (index) => `payload.tasks.${index}.reply_to`,
      (id) => current.tasks.find((task) => task.id === id)?.channel,
    );
    if (reply) return reply;
    // what is already on the list was judged when it was filed
    const filed = new Set([
      ...current.tasks.map((task) => task.id),
      ...(current.recurring ?? []).map((entry) => entry.id),
    ]);
    const cleanRoom = taskCleanRoomProblem(context, [
      ...payload.tasks.flatMap((task, index) =>
        task.id && filed.has(task.id)
          ? []
          : [[`payload.tasks.${index}.prompt`, task.prompt] as const],
      ),
      ...(payload.recurring ?? []).flatMap((entry, index) =>
        entry.id && filed.has(entry.id)
          ? []
          : [[`payload.recurring.${index}.prompt`, entry.prompt] as const],
      ),
    ]);
    if (cleanRoom) return cleanRoom;
    return current.version === payload.base_version
      ? undefined
      : `payload.base_version: the task list is at version ${current.version} now, not ${payload.base_version}; read ~/self/schedule.json again`;
  },
  async run(payload, context) {
    const standing = standingFrom(context);
    const origin = sessionChannel(context);
    const carried = carriedFrom(context);
    const zone = zoneOf(context);
    const list = await updateList(context.paths, context.worker, (current) => {
      if (current.version !== payload.base_version)
        throw new RosterError(
          `the task list is at version ${current.version} now, not ${payload.base_version}; nothing was changed`,
        );
      const byId = new Map(current.tasks.map((task) => [task.id, task]));
      const kept = current.tasks.filter((task) => task.state !== "pending");
      // a claimed or finished task listed as it stands is kept as it is (schedule.json
      // shows the run's own claimed task); changing one is refused
      const entries = payload.tasks.filter((entry) => {
        const existing = entry.id ? byId.get(entry.id) : undefined;
        return !(existing && existing.state !== "pending" && existing.prompt === entry.prompt);
      });
      const pending = entries.map((entry): Task => {
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
          ...(entry.depends_on?.length ? { depends_on: entry.depends_on } : {}),
          state: "pending",
          filed_at: existing?.filed_at ?? new Date().toISOString(),
          filed_by: existing?.filed_by ?? fromRun(context),
          standing: existing?.standing ?? standing,
          ...(existing?.template_id ? { template_id: existing.template_id } : {}),
          ...(existing?.window ? { window: existing.window } : {}),
          ...channelOf(existing, origin, entry.reply_to),
          ...(existing
            ? existing.context_channels
              ? { context_channels: existing.context_channels }
              : {}
            : carried),
        };
      });
      const tasks = [...kept, ...pending];
      const problem = dependencyProblem(pending, new Set(tasks.map((task) => task.id)));
      if (problem) throw new RosterError(`${problem}; nothing was changed`);
      const recurring = payload.recurring
        ? applyTemplates(current.recurring ?? [], payload.recurring, {
            by: fromRun(context),
            standing,
            now: new Date(),
            zone,
            // a chat session's template fires tasks from its channel, carrying what it carried
            ...(origin ? { channel: origin } : {}),
            ...carried,
          })
        : (current.recurring ?? []);
      return { tasks, recurring };
    });
    refreshView(context, list);
    return { status: "ok", version: list.version };
  },
};
