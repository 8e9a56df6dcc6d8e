import type { Task, Template } from "../../records/task-list/store.ts";
import type { Report } from "./attest.ts";

/**
 * `roster task ls` as a person reads it: one line per task, then the
 * recurring templates with their next fires; `task show` for one of either.
 */
const clip = (text: string, max: number) => {
  const line = text.replace(/\s+/g, " ");
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
};
const minute = (iso: string) => iso.slice(0, 16).replace("T", " ");

/** A task's note is shown where it says why: blocked, held for review, failed, or waiting. */
const SHOWS_WHY: ReadonlySet<string> = new Set(["blocked", "needs-review", "failed"]);

export function taskLine(task: Task & { worker: string }): string {
  const why =
    task.note &&
    (SHOWS_WHY.has(task.state) || (task.state === "pending" && task.note.startsWith("waiting")))
      ? `  [${clip(task.note, 60)}]`
      : "";
  return `${task.id}  ${task.state.padEnd(12)} ${task.worker.padEnd(12)} ${minute(task.filed_at)}  ${clip(headline(task), 60)}${why}`;
}

/** What a line shows of the prompt: a relayed task's is its sender and the message's start, not the framing. */
function headline(task: Task): string {
  if (!task.relayed_from) return task.prompt;
  const quoted = /<<<relayed [0-9a-f]+: [^\n]*>>>\n([\s\S]*?)\n<<<end of relayed/.exec(
    task.prompt,
  )?.[1];
  return `relayed from ${task.relayed_from}: ${quoted ?? task.prompt}`;
}

export const cadenceText = (template: Pick<Template, "cron" | "every" | "window">) =>
  `${template.cron ? `cron "${template.cron}"` : `every ${template.every ?? "?"}`}${template.window ? ` within ${template.window}` : ""}`;

export function templateLine(template: Template & { worker: string }): string {
  return `${template.id.padEnd(12)} ${template.worker.padEnd(12)} next ${minute(template.next_at)} UTC  ${cadenceText(template)}${template.system ? " (host-owned)" : ""}  ${clip(template.prompt, 50)}`;
}

/** How the task's last run ended and what it said, beside the host's verdict (attest.ts). */
export interface RunSummary {
  ended_by?: string | undefined;
  report?: Report | undefined;
}

const SETTLED = new Set<Task["state"]>(["done", "failed", "needs-review"]);

function runLine(id: string, run: RunSummary | undefined): string {
  if (!run) return `run       ${id}`;
  const report = run.report
    ? `it reported ${run.report.status === "completed" ? "complete" : "failure"}${run.report.note ? `: "${clip(run.report.note, 80)}"` : ""}`
    : "it reported nothing";
  return `run       ${id}, ended by ${run.ended_by ?? "?"}; ${report}`;
}

/** A settled task's state and the host's why, in one line. */
function outcomeLine(task: Task): string {
  const note = task.note ?? "";
  return `outcome   ${note.startsWith(`${task.state}:`) ? note : `${task.state}${note ? `: ${note}` : ""}`}`;
}

export function taskDetail(task: Task & { worker: string }, run?: RunSummary): string {
  return [
    `task      ${task.id} (${task.state}, ${task.standing ?? "proactive"} standing)`,
    `worker    ${task.worker}`,
    `filed     ${task.filed_at} by ${task.filed_by}`,
    `ceiling   ${task.ceiling_min} min${task.at ? `, not before ${task.at}` : ""}${task.window ? `, only within ${task.window}` : ""}`,
    ...(task.depends_on?.length ? [`after     ${task.depends_on.join(", ")}`] : []),
    ...(task.relayed_from
      ? [`relayed   from ${JSON.stringify(task.relayed_from)}: untrusted outside content`]
      : []),
    ...(task.channel
      ? [`channel   ${task.channel}${task.reply_to ? " (its answer goes back there)" : ""}`]
      : []),
    ...(task.template_id ? [`template  ${task.template_id}`] : []),
    ...(task.catch_up ? [`catch-up  ${task.catch_up}`] : []),
    ...(task.run_id ? [runLine(task.run_id, run)] : []),
    ...(SETTLED.has(task.state)
      ? [outcomeLine(task)]
      : task.note
        ? [`note      ${task.note}`]
        : []),
    "",
    task.prompt,
    "",
  ].join("\n");
}

export function templateDetail(template: Template & { worker: string }): string {
  return [
    `template  ${template.id}${template.system ? " (host-owned)" : ""}`,
    `worker    ${template.worker}`,
    `fires     ${cadenceText(template)}; next ${template.next_at}`,
    `filed     ${template.filed_at} by ${template.filed_by} (${template.standing} standing)`,
    `ceiling   ${template.ceiling_min} min`,
    ...(template.last_fired_at
      ? [`last      ${template.last_fired_at} → ${template.last_task_id ?? "?"}`]
      : []),
    "",
    template.prompt,
    "",
  ].join("\n");
}
