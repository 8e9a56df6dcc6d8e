import { TEMPLATE_CEILING_MIN } from "../../ground/config/ceiling.ts";
import type { Heartbeat } from "../../ground/config/heartbeat.ts";
import {
  newTaskId,
  OPEN_STATES,
  type Task,
  type TaskList,
  type Template,
} from "../../records/task-list/store.ts";
import { type Cadence, firesBetween, nextFire } from "./schedule.ts";

/**
 * Recurring templates fired: every template whose cursor has passed files one
 * ordinary pending task and moves its cursor past `now` in the same change —
 * fires missed while the server was down make one task (its note says how
 * many were missed), never one per missed tick. A fire while the task of the
 * template's last fire is still open files nothing, so a slow chore can't
 * pile up. Pure: the caller writes the result under the list's lock.
 */
export const HEARTBEAT_ID = "r-heartbeat";
export const HEARTBEAT_FILER = "heartbeat";

/** A fire later than this after its time is a catch-up, and its task says so. */
const LATE_MS = 60_000;

export const cadenceOf = (template: Pick<Template, "cron" | "every">): Cadence =>
  template.cron !== undefined ? { cron: template.cron } : { every: template.every ?? "1d" };

export interface Fired {
  list: Omit<TaskList, "version">;
  /** One line per template that fired or was skipped, for the server's log. */
  notes: string[];
}

export function fireTemplates(list: TaskList, now: Date, zone: string): Fired | undefined {
  const templates = list.recurring ?? [];
  const due = templates.filter((template) => Date.parse(template.next_at) <= now.getTime());
  if (!due.length) return undefined;
  const tasks = [...list.tasks];
  const notes: string[] = [];
  const recurring = templates.map((template): Template => {
    if (Date.parse(template.next_at) > now.getTime()) return template;
    const scheduled = new Date(template.next_at);
    const cadence = cadenceOf(template);
    const next = nextFire(cadence, now, zone, scheduled).toISOString();
    const last = template.last_task_id
      ? tasks.find((task) => task.id === template.last_task_id)
      : undefined;
    if (last && OPEN_STATES.has(last.state)) {
      notes.push(`${template.id}: skipped, its last task ${last.id} is still ${last.state}`);
      return { ...template, next_at: next };
    }
    const late = now.getTime() - scheduled.getTime() > LATE_MS;
    const missed = late ? firesBetween(cadence, scheduled, now, zone) : 0;
    const task: Task = {
      id: newTaskId(),
      prompt: template.prompt,
      ceiling_min: template.ceiling_min,
      state: "pending",
      filed_at: now.toISOString(),
      filed_by: template.system ? HEARTBEAT_FILER : `template:${template.id}`,
      standing: template.standing,
      template_id: template.id,
      ...(template.window ? { window: template.window } : {}),
      // where it was filed from, its answer kept home: a fire is no one's ask in that channel
      ...(template.channel ? { channel: template.channel, reply_to: false } : {}),
      ...(template.context_channels?.length ? { context_channels: template.context_channels } : {}),
      ...(late
        ? (() => {
            const said = `due at ${template.next_at}${missed > 0 ? ` (and ${missed} more fire${missed === 1 ? "" : "s"} since)` : ""}, missed while the server was down; run once now`;
            return { catch_up: said, note: `catch-up: ${said}` };
          })()
        : {}),
    };
    tasks.push(task);
    notes.push(`${template.id}: filed ${task.id}${late ? " (catch-up)" : ""}`);
    return { ...template, next_at: next, last_fired_at: now.toISOString(), last_task_id: task.id };
  });
  return { list: { tasks, recurring }, notes };
}

/**
 * The heartbeat as a system template: added, changed or removed to match the
 * config. A new one fires at once (or when state/heartbeats.json, the older
 * record of the last one, says it is due); a changed cadence keeps the time
 * of the last fire. Undefined when the list already matches.
 */
export function syncHeartbeat(
  list: TaskList,
  heartbeat: Heartbeat | undefined,
  now: Date,
  zone: string,
  lastFiledBefore?: string,
): Omit<TaskList, "version"> | undefined {
  const recurring = list.recurring ?? [];
  const current = recurring.find((template) => template.id === HEARTBEAT_ID);
  const others = recurring.filter((template) => template.id !== HEARTBEAT_ID);
  if (!heartbeat) return current ? { tasks: list.tasks, recurring: others } : undefined;
  if (
    current &&
    current.every === heartbeat.every &&
    current.prompt === heartbeat.prompt &&
    current.ceiling_min === heartbeat.ceilingMin
  )
    return undefined;
  const lastFire = current?.last_fired_at ?? lastFiledBefore;
  const anchor = lastFire ? new Date(lastFire) : undefined;
  const next = anchor
    ? nextFire({ every: heartbeat.every }, anchor, zone, anchor)
    : // never fired: at once
      now;
  const template: Template = {
    id: HEARTBEAT_ID,
    prompt: heartbeat.prompt,
    every: heartbeat.every,
    ceiling_min: heartbeat.ceilingMin,
    filed_at: current?.filed_at ?? now.toISOString(),
    filed_by: HEARTBEAT_FILER,
    standing: "proactive",
    system: true,
    next_at: next.toISOString(),
    ...(current?.last_fired_at ? { last_fired_at: current.last_fired_at } : {}),
    ...(current?.last_task_id ? { last_task_id: current.last_task_id } : {}),
  };
  return { tasks: list.tasks, recurring: [template, ...others] };
}

/** Who filed a template, when, and from where (a chat session's channel and what its run carried). */
export interface TemplateFiling extends Partial<Pick<Template, "channel" | "context_channels">> {
  by: string;
  standing: Template["standing"];
  now: Date;
  zone: string;
}

/** A template as filed: its first fire is the first after `now`. */
export function newTemplate(
  fields: { prompt: string; cadence: Cadence; window?: string; ceiling_min?: number },
  filed: TemplateFiling & { id?: string },
): Template {
  return {
    id: filed.id ?? `r-${newTaskId().slice(2)}`,
    prompt: fields.prompt,
    ...(fields.cadence.cron !== undefined
      ? { cron: fields.cadence.cron }
      : { every: fields.cadence.every }),
    ...(fields.window ? { window: fields.window } : {}),
    ceiling_min: fields.ceiling_min ?? TEMPLATE_CEILING_MIN,
    filed_at: filed.now.toISOString(),
    filed_by: filed.by,
    standing: filed.standing,
    next_at: nextFire(fields.cadence, filed.now, filed.zone).toISOString(),
    ...(filed.channel ? { channel: filed.channel } : {}),
    ...(filed.context_channels?.length ? { context_channels: filed.context_channels } : {}),
  };
}
