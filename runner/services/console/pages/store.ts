import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { html } from "hono/html";
import {
  describeTarget,
  listSnapshots,
  type SnapshotMeta,
  type StoreTarget,
  workerDir,
} from "../../../boundary/store/snapshots.ts";
import type { RosterPaths } from "../../../ground/config/paths.ts";
import { type Html, when } from "../html.ts";

/**
 * The store: per worker (and per channel store it has), its snapshots newest
 * first, each with the run that made it and what that run changed. Restore
 * is a form that asks first (a confirmation page, then a post with the CSRF
 * token) and does what `roster worker restore --from` does; the store as it
 * was is snapshotted first, and the result names the snapshot that undoes it.
 */
const WHY: Record<SnapshotMeta["reason"], string> = {
  run: "after run",
  sweep: "daily sweep",
  "before-restore": "before a restore",
};

const SHOWN_PATHS = 20;

export const storeQuery = (target: StoreTarget) =>
  target.channel ? `?channel=${encodeURIComponent(target.channel)}` : "";

/** A worker's stores: its own, then its channel stores. */
export function targetsOf(paths: RosterPaths, worker: string): StoreTarget[] {
  const channels = join(workerDir(paths, worker), "channel-store-snapshots");
  const names = existsSync(channels) ? readdirSync(channels).sort() : [];
  return [{ worker }, ...names.map((channel) => ({ worker, channel }))];
}

function changes(snapshot: SnapshotMeta): Html {
  const counts = `+${snapshot.added} ~${snapshot.changed} -${snapshot.removed}`;
  const listed = snapshot.paths;
  if (!listed) return html`${counts}`;
  const lines = [
    ...listed.added.map((path) => `+ ${path}`),
    ...listed.changed.map((path) => `~ ${path}`),
    ...listed.removed.map((path) => `- ${path}`),
  ];
  const total = snapshot.added + snapshot.changed + snapshot.removed;
  return html`<details><summary>${counts}</summary><pre class="paths">${lines.slice(0, SHOWN_PATHS).join("\n")}${
    total > SHOWN_PATHS ? `\n… and ${total - SHOWN_PATHS} more` : ""
  }</pre></details>${
    snapshot.skipped.length
      ? html` <span class="muted">(${snapshot.skipped.length} skipped)</span>`
      : ""
  }`;
}

function snapshotRow(target: StoreTarget, snapshot: SnapshotMeta, newest: boolean): Html {
  const run = snapshot.run
    ? html` <a href="/runs/${encodeURIComponent(target.worker)}/${encodeURIComponent(snapshot.run)}">${snapshot.run}</a>`
    : "";
  const restore = `/store/${encodeURIComponent(target.worker)}/${encodeURIComponent(snapshot.name)}/restore${storeQuery(target)}`;
  return html`<tr data-snapshot="${snapshot.name}">
<td><code>${snapshot.name}</code>${newest ? html` <span class="muted">(newest)</span>` : ""}</td>
<td>${when(snapshot.made_at)}</td><td>${WHY[snapshot.reason] ?? snapshot.reason}${run}</td>
<td>${changes(snapshot)}</td>
<td>${newest ? "" : html`<a class="button" href="${restore}">Restore…</a>`}</td></tr>`;
}

export function storePart(paths: RosterPaths, workers: string[]): Html {
  return html`${workers.map(
    (worker) => html`<section class="worker-store" id="${worker}"><h2>${worker}</h2>
${targetsOf(paths, worker).map((target) => {
  const snapshots = listSnapshots(paths, target).reverse();
  return html`<h3>${describeTarget(target)}</h3>${
    snapshots.length
      ? html`<table class="snapshots" data-store="${target.channel ?? ""}"><thead><tr><th>snapshot</th><th>made (UTC)</th><th>by</th><th>changes</th><th></th></tr></thead>
<tbody>${snapshots.map((snapshot, index) => snapshotRow(target, snapshot, index === 0))}</tbody></table>`
      : html`<p class="muted">No snapshots yet.</p>`
  }`;
})}</section>`,
  )}`;
}

/** The question before a restore: what goes back, and that it can be undone. */
export function confirmPart(target: StoreTarget, snapshot: SnapshotMeta, csrf: string): Html {
  const action = `/store/${encodeURIComponent(target.worker)}/${encodeURIComponent(snapshot.name)}/restore${storeQuery(target)}`;
  return html`<p>Put ${describeTarget(target)} back as it was in snapshot <code>${snapshot.name}</code>
(${WHY[snapshot.reason] ?? snapshot.reason}${snapshot.run ? ` ${snapshot.run}` : ""}, ${when(snapshot.made_at)} UTC)?</p>
<p>The store as it is now is snapshotted first: the page that follows names the snapshot that undoes this.</p>
<form method="post" action="${action}" class="inline">
<input type="hidden" name="csrf" value="${csrf}">
<button type="submit" name="verb" value="restore">Restore</button></form>
<a href="/store#${encodeURIComponent(target.worker)}">Cancel</a>`;
}

/** What a restore did, and how to undo it. */
export function restoredPart(
  target: StoreTarget,
  result: { restored: SnapshotMeta; undo: string | undefined; kept: string[] },
  csrf: string,
): Html {
  const undo = result.undo
    ? html`<p data-undo="${result.undo}">The store as it was is snapshot <code>${result.undo}</code>.</p>
<form method="post" action="/store/${encodeURIComponent(target.worker)}/${encodeURIComponent(result.undo)}/restore${storeQuery(target)}" class="inline">
<input type="hidden" name="csrf" value="${csrf}">
<button type="submit" name="verb" value="undo">Undo this restore</button></form>`
    : "";
  return html`<p class="done" data-restored="${result.restored.name}">Restored ${describeTarget(target)} from snapshot <code>${result.restored.name}</code>.</p>
${undo}
${result.kept.length ? html`<p class="muted">Left in place, since no snapshot holds them: ${result.kept.join(", ")}</p>` : ""}
<p><a href="/store#${encodeURIComponent(target.worker)}">Back to the store</a></p>`;
}
