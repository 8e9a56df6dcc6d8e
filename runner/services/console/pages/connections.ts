import { html } from "hono/html";
import type { RosterPaths } from "../../../ground/config/paths.ts";
import { type Age, ageOf, agePhrases } from "../../../ground/vault/credential-age.ts";
import { vaultNames } from "../../../ground/vault/vault-file.ts";
import { type ConnectionRow, listConnections } from "../../../work/connections/manage.ts";
import type { Html } from "../html.ts";

/**
 * Connections and the age of each credential, as `roster connection ls`
 * shows them (the same rows, the same words from vault/credential-age.ts):
 * what expires within 7 days or has expired is marked, so an operator sees
 * it before a token stops a worker at night. Then the vault's credentials
 * that belong to no connection (a model key, SMTP's, the parent proxy's).
 * Only names, states and ages: nothing here reads a secret.
 */
export interface CredentialAges {
  connections: (ConnectionRow & { age?: Age })[];
  /** Vault credentials no connection file names. */
  others: { name: string; age?: Age }[];
  /** How many of both are expiring within 7 days, and how many have expired. */
  expiring: number;
  expired: number;
}

export function credentialAges(paths: RosterPaths, now = Date.now()): CredentialAges {
  const aged = <T extends { name: string }>(row: T): T & { age?: Age } => {
    const age = ageOf(paths.vault, row.name, now);
    return { ...row, ...(age ? { age } : {}) };
  };
  const connections = listConnections(paths).map(aged);
  const named = new Set(connections.map((row) => row.name));
  const others = vaultNames(paths.vault)
    .filter((name) => !named.has(name))
    .map((name) => aged({ name }));
  const words = [...connections, ...others].map((row) => row.age?.expiry);
  return {
    connections,
    others,
    expiring: words.filter((word) => word === "expiring").length,
    expired: words.filter((word) => word === "expired").length,
  };
}

/** The overview's line: how many credentials need a person, linking to the page that names them. */
export function expiryNotice(ages: Pick<CredentialAges, "expiring" | "expired">): Html {
  const { expiring, expired } = ages;
  if (!expiring && !expired)
    return html`<p class="credentials muted" data-expiring="0" data-expired="0">Credentials: none expiring within 7 days (<a href="/connections">connections</a>).</p>`;
  const parts = [
    ...(expired ? [html`<span class="deny">${expired} expired</span>`] : []),
    ...(expiring ? [html`<span class="pending">${expiring} expiring within 7 days</span>`] : []),
  ];
  return html`<p class="credentials" data-expiring="${expiring}" data-expired="${expired}">Credentials: ${parts.map((part, i) => (i ? html`, ${part}` : part))} — <a href="/connections">see connections</a>.</p>`;
}

function ageCells(age: Age | undefined, now: number): Html {
  if (!age)
    return html`<td class="muted">not recorded (stored before ages were kept)</td><td data-expiry="">–</td>`;
  const { set, expiry } = agePhrases(age, now);
  const tone = age.expiry === "expired" ? "deny" : age.expiry === "expiring" ? "pending" : "";
  return html`<td>${set}</td><td data-expiry="${age.expiry ?? ""}"${tone ? html` class="state ${tone}"` : ""}>${expiry ?? html`<span class="muted">no expiry known</span>`}</td>`;
}

export function connectionsPart(ages: CredentialAges, now = Date.now()): Html {
  return html`${expiryNotice(ages)}
<div class="table-wrap"><table><thead><tr><th>connection</th><th>kind</th><th>granted to</th><th>state</th><th>secret set</th><th>expiry</th></tr></thead><tbody>
${ages.connections.map(
  (row) => html`<tr data-connection="${row.name}"><td>${row.name}</td><td>${row.kind}</td>
<td>${row.grantees.length ? row.grantees.join(", ") : html`<span class="muted">nobody</span>`}</td>
<td>${row.state}: ${row.detail}</td>${ageCells(row.age, now)}</tr>`,
)}
</tbody></table></div>
${ages.connections.length ? "" : html`<p class="muted">No connections (roster connection catalog, then roster connection add).</p>`}
<h2>Other vault credentials</h2>
<div class="table-wrap"><table><thead><tr><th>credential</th><th>set</th><th>expiry</th></tr></thead><tbody>
${ages.others.map(
  (row) =>
    html`<tr data-credential="${row.name}"><td>${row.name}</td>${ageCells(row.age, now)}</tr>`,
)}
</tbody></table></div>
${ages.others.length ? "" : html`<p class="muted">None.</p>`}`;
}
