import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { html } from "hono/html";
import type { DecisionRecord } from "../../../boundary/gateway/audit/audit.ts";
import type { RosterPaths } from "../../../ground/config/paths.ts";
import { type RunRecord, readRecord, runDir } from "../../../records/run-records/run-record.ts";
import { conversation, formatUsage, runRows, runUsage } from "../../../work/runs/runs-view.ts";
import { describeSentinelLeak, sentinelLeakOf } from "../../../work/runs/sentinel-mark.ts";
import { duration, type Html, when } from "../html.ts";
import { decisionRows } from "./door.ts";

/** Runs: the list with filters, and one run in full (conversation, prompt, files, door). */
export interface RunFilter {
  worker?: string;
  kind?: string;
  state?: string;
}

const LIMIT = 200;
const RUN_ID = /^[0-9A-Za-z][0-9A-Za-z._-]{0,127}$/;

export function runsPart(paths: RosterPaths, filter: RunFilter): Html {
  const rows = runRows(paths.state, filter.worker || undefined, LIMIT).filter(
    (row) =>
      (!filter.kind || row.kind === filter.kind) && (!filter.state || row.state === filter.state),
  );
  return html`<table><thead><tr><th>run</th><th>worker</th><th>kind</th><th>state</th><th>ended by</th><th>started (UTC)</th><th>duration</th></tr></thead><tbody>
${rows.map(
  (
    row,
  ) => html`<tr><td><a href="/runs/${encodeURIComponent(row.worker)}/${encodeURIComponent(row.id)}">${row.id}</a></td>
<td>${row.worker}</td><td>${row.kind}</td><td class="${row.state}">${row.state}</td><td>${row.ended_by ?? "–"}</td>
<td>${when(row.started_at)}</td><td>${duration(row.started_at, row.ended_at)}</td></tr>`,
)}
</tbody></table>${rows.length ? "" : html`<p class="muted">No runs match.</p>`}`;
}

export function runsFilters(filter: RunFilter, workers: string[]): Html {
  const option = (value: string, current: string | undefined) =>
    html`<option value="${value}"${value === (current ?? "") ? html` selected` : ""}>${value || "any"}</option>`;
  return html`<form class="filters" method="get" action="/runs">
<label>worker <select name="worker">${["", ...workers].map((w) => option(w, filter.worker))}</select></label>
<label>kind <select name="kind">${["", "box", "task", "session", "exec"].map((k) => option(k, filter.kind))}</select></label>
<label>state <select name="state">${["", "running", "done", "failed"].map((s) => option(s, filter.state))}</select></label>
<button type="submit">Filter</button></form>`;
}

/** The run's conversation as the page shows it: what was not read said first. */
function conversationText(dir: string): string {
  const { lines, unread } = conversation(dir);
  return [...(unread ? [unread] : []), ...lines].join("\n") || "(no events)";
}

const read = (file: string) => (existsSync(file) ? readFileSync(file, "utf8") : undefined);

/** One run (and whether it is still going), or undefined when there is no such run. */
export function runPage(
  paths: RosterPaths,
  worker: string,
  id: string,
  /** The run's door decisions, found without reading the whole log where that can be. */
  decisionsOf: (record: RunRecord) => DecisionRecord[],
): { body: Html; running: boolean } | undefined {
  // the id comes from a URL: one folder name of the worker's runs, never a path
  if (!RUN_ID.test(id) || !RUN_ID.test(worker)) return undefined;
  const dir = runDir(paths.state, worker, id);
  const record = readRecord(dir);
  if (!record || record.id !== id || record.worker !== worker) return undefined;
  const decisions = decisionsOf(record);
  const usage = runUsage(decisions, id);
  const leak = sentinelLeakOf(paths.audit, record);
  const hosts = new Map<string, { allowed: number; refused: number; bytes: number }>();
  for (const decision of decisions) {
    const entry = hosts.get(decision.request.host) ?? { allowed: 0, refused: 0, bytes: 0 };
    if (decision.status < 400) entry.allowed++;
    else entry.refused++;
    entry.bytes += decision.bytes ?? 0;
    hosts.set(decision.request.host, entry);
  }
  const files = readdirSync(dir)
    .sort()
    .map((name) => {
      const stat = statSync(join(dir, name));
      return stat.isDirectory() ? `${name}/` : `${name}  ${stat.size} bytes`;
    });
  const system = read(join(dir, "prompt/system.md"));
  const input = read(join(dir, "prompt/input.md"));
  const body = html`<table>
<tr><th>worker</th><td>${record.worker}</td></tr>
<tr><th>kind</th><td>${record.kind}</td></tr>
<tr><th>state</th><td class="${record.state}">${record.state}${record.ended_by ? ` (ended by ${record.ended_by})` : ""}</td></tr>
<tr><th>started</th><td>${when(record.started_at)}</td></tr>
<tr><th>duration</th><td>${duration(record.started_at, record.ended_at)}</td></tr>
<tr><th>exit</th><td>${record.exit_code ?? "–"}</td></tr>
${record.error ? html`<tr><th>error</th><td>${record.error}</td></tr>` : ""}
${leak ? html`<tr><th>sentinel</th><td class="deny">${describeSentinelLeak(leak)}</td></tr>` : ""}
${usage ? html`<tr><th>model</th><td>${formatUsage(usage)}</td></tr>` : ""}
</table>
<h2>Conversation</h2>
<pre class="conversation">${conversationText(dir)}</pre>
<h2>Door</h2>
<table><thead><tr><th>host</th><th>allowed</th><th>refused</th><th>bytes</th></tr></thead><tbody>
${[...hosts].map(([host, entry]) => html`<tr><td>${host}</td><td class="allow">${entry.allowed}</td><td class="deny">${entry.refused}</td><td>${entry.bytes}</td></tr>`)}
</tbody></table>
${decisionRows(decisions.slice(-100).reverse())}
<h2>Prompt</h2>
${input ? html`<h3>task</h3><pre>${input}</pre>` : ""}
${system ? html`<details><summary>system prompt</summary><pre>${system}</pre></details>` : ""}
<h2>Files</h2>
<pre>${files.join("\n")}</pre>`;
  return { body, running: record.state === "running" };
}
