import type { ScopedGrant } from "../../../ground/config/grant-schema.ts";
import { denied, type Refusal } from "../judging/refusals.ts";
import type { RequestFacts } from "../judging/request-facts.ts";
import type { McpScope } from "../mcp/hosts.ts";

/**
 * What the door passes of an upgrade (admission.ts asks once the grants
 * allowed it): after the handshake the two sockets are spliced and nothing
 * more is read, so only what can be judged at the handshake goes through.
 */

/**
 * Why an upgrade the grants allow is refused all the same. Past the handshake
 * nothing is read: only a WebSocket (a GET) is passed, never h2c, whose HTTP/2
 * requests would go by unjudged; and where an MCP rule may read (a host that
 * speaks MCP, or any host when a rule names none), only a grant that names the
 * upgrade passes a WebSocket, whose messages go unread.
 */
export function upgradeRefused(
  facts: RequestFacts,
  scope: McpScope,
  grant: ScopedGrant,
): Refusal | undefined {
  const protocol = facts.headers.upgrade?.trim().toLowerCase();
  if (protocol !== "websocket" || facts.method !== "GET") return notWebSocket(grant.name, protocol);
  if (scope !== "no" && !allowsUpgrade(grant)) return upgradeRefusal(grant.name, facts.host, scope);
  return undefined;
}

function upgradeRefusal(rule: string, host: string, scope: McpScope): Refusal {
  const where =
    scope === "mcp" ? `${host} speaks MCP` : "an MCP rule with no host reads every host";
  return denied(
    rule,
    `${where} and a WebSocket's messages can't be judged: a grant must allow it explicitly (match.headerContains = { upgrade = "websocket" })`,
  );
}

function notWebSocket(rule: string, protocol: string | undefined): Refusal {
  return denied(
    rule,
    `the door passes only a WebSocket upgrade (GET, Upgrade: websocket), not ${JSON.stringify(protocol ?? "")}: what follows any other would go by unjudged`,
  );
}

/** Whether a grant names the upgrade it allows: `match.headerContains` has an `upgrade` entry. */
function allowsUpgrade(grant: ScopedGrant): boolean {
  return Object.keys(grant.match?.headerContains ?? {}).some(
    (name) => name.toLowerCase() === "upgrade",
  );
}
