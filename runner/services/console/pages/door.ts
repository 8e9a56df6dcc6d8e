import { join } from "node:path";
import { html } from "hono/html";
import type { DecisionRecord } from "../../../boundary/gateway/audit/audit.ts";
import type { RosterPaths } from "../../../ground/config/paths.ts";
import { workerOfSubject, workerSubject } from "../../../ground/config/subject.ts";
import { linesFromEndAcross } from "../../../ground/files/rotation/read-across.ts";
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

/** How far back the page looks for matching decisions, whatever the log's size. */
export const DOOR_LOOKBACK_BYTES = 64 * 2 ** 20;

export function doorPart(
  paths: RosterPaths,
  filter: DoorFilter,
  lookback = DOOR_LOOKBACK_BYTES,
): Html {
  const subject = filter.worker ? workerSubject(filter.worker) : undefined;
  const matches = (d: DecisionRecord) =>
    (!subject || d.subject === subject) &&
    (!filter.run || (d.run_id ?? "").startsWith(filter.run)) &&
    (!filter.verdict ||
      (filter.verdict === "refused" ? d.status >= 400 : d.verdict === filter.verdict)) &&
    (!filter.host || d.request.host.includes(filter.host));
  // newest first, from the log's end and on into the files rotated out of it: a page never reads the whole log
  const shown: DecisionRecord[] = [];
  const whole = linesFromEndAcross(
    join(paths.audit, "decisions.jsonl"),
    (line) => {
      let record: DecisionRecord;
      try {
        record = JSON.parse(line) as DecisionRecord;
      } catch {
        return true; // a line still being written
      }
      // action dispositions share the file; the approvals page shows those
      if (record.request && matches(record)) shown.push(record);
      return shown.length < LIMIT;
    },
    lookback,
  );
  const more = shown.length === LIMIT ? `the newest ${LIMIT} shown` : "";
  const looked =
    whole || more ? "" : `in the last ${Math.round(lookback / 2 ** 20)} MiB of the log`;
  return html`<p class="muted">${shown.length} decision(s)${
    more || looked
      ? ` (${[more, looked].filter(Boolean).join(", ")}; \`roster gateway log\` reads it all)`
      : ""
  }.</p>
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
