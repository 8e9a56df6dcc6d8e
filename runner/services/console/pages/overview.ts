import { html } from "hono/html";
import type { LimitStanding } from "../../../boundary/gateway/spend/budget.ts";
import type { LoadedConfig } from "../../../ground/config/load.ts";
import type { RosterPaths } from "../../../ground/config/paths.ts";
import { workerSubject } from "../../../ground/config/subject.ts";
import { readTasks } from "../../../records/task-list/store.ts";
import { gateWorker, listGates } from "../../actions/gates.ts";
import type { DoorWindow } from "../door-summary.ts";
import { type Html, when } from "../html.ts";
import type { RunFact } from "../run-index.ts";

/**
 * The landing page's cards: one per worker, answering at a glance what it
 * is doing, how its last run ended, what comes next, what waits for a
 * person, what it spent today against its limits, and what the door refused
 * it in the last 24 hours — each linking to the page with the detail.
 */
export interface WorkerFacts {
  name: string;
  /** Runs going now (a session's included). */
  live: RunFact[];
  last: RunFact | undefined;
  next: { at: string; what: string } | undefined;
  queued: number;
  waiting: number;
  limits: LimitStanding[];
  refused: number;
}

export function workerFacts(options: {
  paths: RosterPaths;
  config: LoadedConfig;
  runs: RunFact[];
  door: DoorWindow;
  standing: (subject: string) => LimitStanding[];
}): WorkerFacts[] {
  const { paths, config, runs, door } = options;
  const gates = listGates(paths).filter((gate) => gate.state === "pending");
  return [...config.workers.keys()].sort().map((name) => {
    const mine = runs.filter((run) => run.worker === name);
    const tasks = readTasks(paths, name);
    const fires = (tasks.recurring ?? [])
      .map((template) => ({ at: template.next_at, what: template.prompt }))
      .sort((a, b) => a.at.localeCompare(b.at));
    return {
      name,
      live: mine.filter((run) => run.state === "running"),
      last: mine.find((run) => run.state !== "running"),
      next: fires[0],
      queued: tasks.tasks.filter((task) => task.state === "pending").length,
      waiting: gates.filter((gate) => gateWorker(gate) === name).length,
      limits: options.standing(workerSubject(name)),
      refused: door.refusedBy[name] ?? 0,
    };
  });
}

const clip = (text: string, max: number) => {
  const line = text.replace(/\s+/g, " ");
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
};

function stateOf(facts: WorkerFacts): { word: string; tone: string } {
  if (facts.live.some((run) => run.kind === "session"))
    return { word: "in a session", tone: "running" };
  if (facts.live.length) return { word: "running", tone: "running" };
  return { word: "idle", tone: "muted" };
}

const runLink = (run: RunFact) =>
  `/runs/${encodeURIComponent(run.worker)}/${encodeURIComponent(run.id)}`;

function lastRun(run: RunFact | undefined): Html {
  if (!run) return html`<span class="muted">no run yet</span>`;
  const how = run.state === "done" ? "done" : `failed (${run.ended_by ?? "?"})`;
  return html`<a href="${runLink(run)}">${run.kind} ${when(run.ended_at ?? run.started_at)}</a> <span class="${run.state}">${how}</span>`;
}

function limitBar(limit: LimitStanding): Html {
  const share = limit.max > 0 ? Math.min(1, limit.used / limit.max) : 1;
  const amount = (value: number) =>
    limit.currency === "usd"
      ? `$${value.toFixed(4)}`
      : Number.isInteger(value)
        ? String(value)
        : value.toFixed(4);
  const tone = share >= 1 ? "deny" : share >= 0.8 ? "pending" : "allow";
  return html`<div class="limit" data-scope="${limit.scope}" data-currency="${limit.currency}" data-window="${limit.window}" data-used="${limit.used}" data-max="${limit.max}">
<span>${limit.scope} ${limit.currency} / ${limit.window}: ${amount(limit.used)} of ${amount(limit.max)}</span>
<meter class="${tone}" min="0" max="1" low="0.8" high="0.99" optimum="0" value="${share.toFixed(4)}">${Math.round(share * 100)}%</meter>
</div>`;
}

export function cardsPart(workers: WorkerFacts[]): Html {
  if (workers.length === 0) return html`<p class="muted">No workers yet (roster worker add).</p>`;
  return html`<div class="cards">${workers.map((facts) => {
    const state = stateOf(facts);
    const live = facts.live[0];
    return html`<article class="card" data-worker="${facts.name}">
<h2><a href="/runs?worker=${encodeURIComponent(facts.name)}">${facts.name}</a> <span class="state ${state.tone}" data-state="${state.word}">${state.word}</span></h2>
<dl>
${live ? html`<dt>now</dt><dd><a href="${runLink(live)}">${live.kind} since ${when(live.started_at)}</a></dd>` : ""}
<dt>last run</dt><dd data-last="${facts.last?.id ?? ""}">${lastRun(facts.last)}</dd>
<dt>next</dt><dd>${
      facts.next
        ? html`<a href="/tasks#${encodeURIComponent(facts.name)}">${when(facts.next.at)} UTC</a> ${clip(facts.next.what, 48)}`
        : html`<span class="muted">nothing scheduled</span>`
    }${facts.queued ? html` · ${facts.queued} queued` : ""}</dd>
<dt>approvals</dt><dd data-waiting="${facts.waiting}">${
      facts.waiting
        ? html`<a href="/approvals" class="pending">${facts.waiting} waiting</a>`
        : html`<span class="muted">none waiting</span>`
    }</dd>
<dt>spend</dt><dd>${facts.limits.length ? facts.limits.map(limitBar) : html`<span class="muted">no limits</span>`}</dd>
<dt>door, 24 h</dt><dd data-refused="${facts.refused}">${
      facts.refused
        ? html`<a class="deny" href="/door?worker=${encodeURIComponent(facts.name)}&amp;verdict=deny">${facts.refused} refused</a>`
        : html`<span class="muted">nothing refused</span>`
    }</dd>
</dl>
</article>`;
  })}</div>`;
}
