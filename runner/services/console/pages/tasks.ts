import { html } from "hono/html";
import type { RosterPaths } from "../../../ground/config/paths.ts";
import {
  OPEN_STATES,
  readTasks,
  type Task,
  type Template,
} from "../../../records/task-list/store.ts";
import { cadenceText } from "../../../work/tasks/list-view.ts";
import { type Html, when } from "../html.ts";

/**
 * Tasks and schedules: per worker, its recurring templates with their next
 * fires, then its tasks newest first with what each waits for (a time, a
 * window, the tasks it depends on). Cancel, requeue and retire are forms
 * that post with the CSRF token and do what `roster task rm` and
 * `roster task requeue` do (tasks/operator-edits.ts, the same functions).
 */
const SHOWN = 100;

const clip = (text: string, max: number) => {
  const line = text.replace(/\s+/g, " ");
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
};

/** What a task can have done to it from the page, as the CLI allows it. */
export function verbsFor(task: Pick<Task, "state">): Array<"cancel" | "requeue"> {
  if (task.state === "pending") return ["cancel"];
  if (task.state === "blocked") return ["cancel", "requeue"];
  if (OPEN_STATES.has(task.state)) return [];
  return ["requeue"];
}

function button(action: string, verb: string, label: string, csrf: string): Html {
  return html`<form method="post" action="${action}/${verb}" class="inline">
<input type="hidden" name="csrf" value="${csrf}"><button type="submit" name="verb" value="${verb}">${label}</button></form>`;
}

function templateRow(worker: string, template: Template, csrf: string): Html {
  const action = `/tasks/${encodeURIComponent(worker)}/${encodeURIComponent(template.id)}`;
  return html`<tr id="${template.id}" data-template="${template.id}">
<td><code>${template.id}</code></td><td>${cadenceText(template)}</td>
<td data-next="${template.next_at}">${when(template.next_at)}</td><td>${when(template.last_fired_at)}</td>
<td>${clip(template.prompt, 80)}</td>
<td>${template.system ? html`<span class="muted">host-owned</span>` : button(action, "retire", "Retire", csrf)}</td></tr>`;
}

function waitsFor(task: Task): string {
  const parts = [
    task.at ? `not before ${when(task.at)}` : "",
    task.window ? `within ${task.window}` : "",
    task.depends_on?.length ? `after ${task.depends_on.join(", ")}` : "",
  ].filter(Boolean);
  return parts.join("; ") || "–";
}

function taskRow(worker: string, task: Task, csrf: string): Html {
  const action = `/tasks/${encodeURIComponent(worker)}/${encodeURIComponent(task.id)}`;
  const run = task.run_id
    ? html`<a href="/runs/${encodeURIComponent(worker)}/${encodeURIComponent(task.run_id)}">${task.run_id}</a>`
    : "–";
  return html`<tr id="${task.id}" data-task="${task.id}" data-state="${task.state}">
<td><code>${task.id}</code></td><td class="${task.state}">${task.state}</td><td>${when(task.filed_at)}</td>
<td>${waitsFor(task)}</td><td>${clip(task.prompt, 80)}${task.note ? html`<br><span class="muted">${clip(task.note, 120)}</span>` : ""}</td>
<td>${run}</td>
<td>${verbsFor(task).map((verb) => button(action, verb, verb === "cancel" ? "Cancel" : "Requeue", csrf))}</td></tr>`;
}

export function tasksPart(paths: RosterPaths, workers: string[], csrf: string): Html {
  return html`${workers.map((worker) => {
    const list = readTasks(paths, worker);
    const templates = [...(list.recurring ?? [])].sort((a, b) =>
      a.next_at.localeCompare(b.next_at),
    );
    const tasks = [...list.tasks].reverse().slice(0, SHOWN);
    return html`<section class="worker-tasks" id="${worker}">
<h2>${worker}</h2>
<h3>Recurring</h3>
${
  templates.length
    ? html`<table class="templates"><thead><tr><th>template</th><th>cadence</th><th>next fire (UTC)</th><th>last fired</th><th>prompt</th><th></th></tr></thead>
<tbody>${templates.map((template) => templateRow(worker, template, csrf))}</tbody></table>`
    : html`<p class="muted">No recurring tasks.</p>`
}
<h3>Tasks</h3>
${
  tasks.length
    ? html`<table class="tasks"><thead><tr><th>task</th><th>state</th><th>filed (UTC)</th><th>waits for</th><th>prompt</th><th>run</th><th></th></tr></thead>
<tbody>${tasks.map((task) => taskRow(worker, task, csrf))}</tbody></table>`
    : html`<p class="muted">No tasks.</p>`
}
</section>`;
  })}`;
}
