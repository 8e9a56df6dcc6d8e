import { html } from "hono/html";
import type { LoadedConfig } from "../../../ground/config/load.ts";
import type { RosterPaths } from "../../../ground/config/paths.ts";
import { workerOfSubject } from "../../../ground/config/subject.ts";
import { executorFor } from "../../actions/desk.ts";
import { type Gate, listGates } from "../../actions/gates.ts";
import { trustOf } from "../../actions/trust-view.ts";
import { type Html, when } from "../html.ts";

/**
 * Approvals: pending gates first, each with what would be sent exactly as
 * the executor would send it (the same rendering `roster approvals show`
 * prints), approve / deny with a note; then recent decisions; then each
 * worker's standing per intent (earned trust counts).
 */
const RECENT = 20;

const workerOf = (gate: Gate) => workerOfSubject(gate.worker);

function body(paths: RosterPaths, gate: Gate): string {
  const executor = executorFor(gate);
  return executor
    ? executor.render(gate.payload, { paths, worker: workerOf(gate), runId: gate.run_id })
    : JSON.stringify(gate.payload, null, 2);
}

function gateCard(paths: RosterPaths, gate: Gate, csrf: string): Html {
  const worker = workerOf(gate);
  const action = `/gates/${encodeURIComponent(worker)}/${encodeURIComponent(gate.id)}`;
  const decidable = gate.state === "pending" || gate.state === "failed";
  return html`<article class="gate" id="${gate.id}" data-state="${gate.state}">
<div><span class="state ${gate.state}">${gate.state}</span> · <code>${gate.id}</code> ·
${worker} · ${gate.intent} → ${gate.executor} · filed ${when(gate.filed_at)}
${gate.run_id ? html` · run <a href="/runs/${encodeURIComponent(worker)}/${encodeURIComponent(gate.run_id)}">${gate.run_id}</a>` : ""}</div>
${gate.rationale ? html`<p><em>why:</em> ${gate.rationale}</p>` : ""}
${gate.decided_by ? html`<p class="muted">decided ${when(gate.decided_at)} by ${gate.decided_by}${gate.decision_note ? html`: ${gate.decision_note}` : ""}</p>` : ""}
${gate.error ? html`<p class="failed">error: ${gate.error}</p>` : ""}
<details${decidable ? html` open` : ""}><summary>what would be sent</summary><pre class="payload">${body(paths, gate)}</pre></details>
${
  decidable
    ? html`<form method="post" action="${action}/approve" class="inline">
<input type="hidden" name="csrf" value="${csrf}">
<input name="note" placeholder="note (optional)" aria-label="note for approve">
<button type="submit" name="verb" value="approve">Approve</button></form>
<form method="post" action="${action}/deny" class="inline">
<input type="hidden" name="csrf" value="${csrf}">
<input name="note" placeholder="why not (optional)" aria-label="note for deny">
<button type="submit" name="verb" value="deny">Deny</button></form>`
    : ""
}
</article>`;
}

export function approvalsPart(paths: RosterPaths, config: LoadedConfig, csrf: string): Html {
  const gates = listGates(paths);
  const open = gates.filter((gate) => gate.state === "pending" || gate.state === "failed");
  const decided = gates
    .filter((gate) => !open.includes(gate))
    .sort((a, b) => (b.decided_at ?? b.filed_at).localeCompare(a.decided_at ?? a.filed_at))
    .slice(0, RECENT);
  const standing = [...config.workers.keys()]
    .sort()
    .flatMap((worker) => trustOf(paths, config, worker).map((intent) => ({ worker, intent })));
  return html`<h2>Waiting (${open.length})</h2>
${open.length ? open.map((gate) => gateCard(paths, gate, csrf)) : html`<p class="muted">Nothing waits for a decision.</p>`}
<h2>Recently decided</h2>
${decided.length ? decided.map((gate) => gateCard(paths, gate, csrf)) : html`<p class="muted">None yet.</p>`}
<h2>Standing per intent</h2>
<table><thead><tr><th>worker</th><th>intent</th><th>executor</th><th>default</th><th>rules</th><th>earned</th></tr></thead><tbody>
${standing.map(
  ({
    worker,
    intent,
  }) => html`<tr><td>${worker}</td><td>${intent.intent}</td><td>${intent.executor}</td><td>${intent.default}</td>
<td>${intent.rules.map((rule) => html`<div>${rule.when}: ${rule.level} <span class="muted">(${rule.source})</span></div>`)}</td>
<td>${intent.earned ? `${intent.earned.executed} executed, ${intent.earned.denied} denied, after ${intent.earned.after}: ${intent.earned.now}` : "–"}</td></tr>`,
)}
</tbody></table>`;
}
