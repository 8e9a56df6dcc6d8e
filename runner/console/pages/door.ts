import { html } from "hono/html";
import type { RosterPaths } from "../../config/paths.ts";
import { workerOfSubject, workerSubject } from "../../config/subject.ts";
import type { DecisionRecord } from "../../gateway/audit.ts";
import { readDecisions } from "../../gateway/audit-view.ts";
import { type Html, when } from "../html.ts";

/** Door: the gateway's decisions, newest first, filterable; refreshed live. */
export interface DoorFilter {
  worker?: string;
  run?: string;
  verdict?: string;
  host?: string;
}

const LIMIT = 200;

export function decisionRows(decisions: DecisionRecord[]): Html {
  return html`<table class="decisions"><thead><tr><th>time (UTC)</th><th>worker</th><th>run</th><th>verdict</th><th>status</th><th>request</th><th>rule</th><th>bytes</th><th>note</th></tr></thead><tbody>
${decisions.map(
  (
    d,
  ) => html`<tr class="${d.status < 400 ? "allow" : "deny"}"><td>${when(d.ts)}</td><td>${workerOfSubject(d.subject ?? "–")}</td>
<td>${d.run_id ?? "–"}</td><td>${d.verdict}</td><td>${d.status}</td>
<td>${d.request.method} ${d.request.host}${d.request.path ?? ""}</td><td>${d.rule ?? "–"}</td><td>${d.bytes ?? ""}</td><td>${d.note ?? ""}</td></tr>`,
)}
</tbody></table>`;
}

export function doorPart(paths: RosterPaths, filter: DoorFilter): Html {
  const subject = filter.worker ? workerSubject(filter.worker) : undefined;
  const matching = readDecisions(paths.audit, filter.run ? { run: filter.run } : {}).filter(
    (d) =>
      (!subject || d.subject === subject) &&
      (!filter.verdict ||
        (filter.verdict === "refused" ? d.status >= 400 : d.verdict === filter.verdict)) &&
      (!filter.host || d.request.host.includes(filter.host)),
  );
  const shown = matching.slice(-LIMIT).reverse();
  return html`<p class="muted">${matching.length} decision(s)${matching.length > LIMIT ? `, newest ${LIMIT} shown` : ""}.</p>
${decisionRows(shown)}`;
}

export function doorFilters(filter: DoorFilter, workers: string[]): Html {
  return html`<form class="filters" method="get" action="/door">
<label>worker <select name="worker">${["", ...workers].map((w) => html`<option value="${w}"${w === (filter.worker ?? "") ? html` selected` : ""}>${w || "any"}</option>`)}</select></label>
<label>run <input name="run" value="${filter.run ?? ""}" size="24"></label>
<label>verdict <select name="verdict">${["", "allow", "tunnel", "gate", "deny", "refused"].map((v) => html`<option value="${v}"${v === (filter.verdict ?? "") ? html` selected` : ""}>${v || "any"}</option>`)}</select></label>
<label>host <input name="host" value="${filter.host ?? ""}" size="24"></label>
<button type="submit">Filter</button></form>`;
}
