import { html } from "hono/html";
import type { RosterPaths } from "../../../ground/config/paths.ts";
import { isChannelId } from "../../../records/channels/ids.ts";
import { listChannels, readMessages } from "../../../records/channels/store.ts";
import type { Session } from "../../../work/sessions/session.ts";
import { type Html, when } from "../html.ts";

/** Sessions and channels: the warm sessions now, every channel, one channel's history. */
export function sessionsPart(paths: RosterPaths, sessions: Session[]): Html {
  const channels = listChannels(paths).sort();
  return html`<h2>Live sessions (${sessions.length})</h2>
<table><thead><tr><th>worker</th><th>channel</th><th>run</th><th>now</th><th>queued</th><th>turns</th></tr></thead><tbody>
${sessions.map(
  ({
    summary: s,
  }) => html`<tr><td>${s.worker}</td><td><a href="/channels/${encodeURIComponent(s.channel)}">${s.channel}</a></td>
<td><a href="/runs/${encodeURIComponent(s.worker)}/${encodeURIComponent(s.runId)}">${s.runId}</a></td>
<td>${s.busy ? "in a turn" : "waiting"}</td><td>${s.queued}</td><td>${s.turns}</td></tr>`,
)}
</tbody></table>
<h2>Channels</h2>
<ul>${channels.map((id) => html`<li><a href="/channels/${encodeURIComponent(id)}">${id}</a></li>`)}</ul>
${channels.length ? "" : html`<p class="muted">No channel has a history yet.</p>`}`;
}

const LIMIT = 200;

/** A channel's history, or undefined when the id is not a channel's. */
export function channelPart(paths: RosterPaths, id: string): Html | undefined {
  if (!isChannelId(id) || !listChannels(paths).includes(id)) return undefined;
  const messages = readMessages(paths, id, { last: LIMIT });
  return html`<table><thead><tr><th>time (UTC)</th><th>who</th><th>role</th><th>message</th></tr></thead><tbody>
${messages.map((m) => html`<tr><td>${when(m.ts)}</td><td>${m.author}</td><td>${m.role}</td><td><pre>${m.content}</pre></td></tr>`)}
</tbody></table>`;
}
