import { surfaceClassAdmits } from "../../../ground/config/edge-scope.ts";
import type { McpMatch, ScopedGrant, Verdict } from "../../../ground/config/grant-schema.ts";
import { hostName } from "../../../ground/config/host-name.ts";
import { hostMatches } from "../../../ground/config/host-pattern.ts";
import { classAdmits, classSaid } from "../../../records/channels/channel-class.ts";
import { type McpFacts, normalisePath, type RequestFacts } from "./request-facts.ts";

/**
 * The judge: grants in order, first match wins, no match denies. Pure — no
 * sockets, no clock — so every rule can be tested by table.
 */
export interface Decision {
  verdict: Verdict;
  /** The grant that decided; undefined when nothing matched (default deny). */
  rule: ScopedGrant | undefined;
  /** For refusals: what would change the answer. */
  hint: string;
}

export const DEFAULT_DENY_HINT =
  "policy said no — retrying won't change the answer; propose an action or ask your lead";

const list = <T>(value: T | T[] | undefined): T[] | undefined =>
  value === undefined ? undefined : Array.isArray(value) ? value : [value];

export function scopeApplies(scope: string, subject: string | undefined): boolean {
  if (subject === undefined) return false;
  return subject === scope || subject.startsWith(`${scope}/`);
}

/** Anchored `*` glob, as used for MCP methods and tool names (`*` matches any run, `/` included). */
export function globMatches(pattern: string, value: string): boolean {
  const regex = new RegExp(
    `^${pattern
      .split("*")
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
      .join(".*")}$`,
  );
  return regex.test(value);
}

export type Phase = "connect" | "request";

function matches(
  grant: ScopedGrant,
  facts: RequestFacts,
  phase: Phase,
  ignoreMethod = false,
): boolean {
  const match = grant.match;
  if (!match) return true;
  const protocols = list(match.protocol);
  if (phase === "request" && protocols && !protocols.includes(facts.protocol)) return false;
  const hosts = list(match.host);
  if (hosts && !hosts.some((pattern) => hostMatches(pattern, facts.host))) return false;
  const ports = list(match.port);
  if (ports && !ports.includes(facts.port)) return false;
  const methods = list(match.method);
  if (
    !ignoreMethod &&
    methods &&
    !methods.some((method) => method === "*" || method.toUpperCase() === facts.method.toUpperCase())
  ) {
    return false;
  }
  if (match.pathPrefix !== undefined) {
    if (phase === "connect") return false;
    const prefix = normalisePath(match.pathPrefix);
    const path = facts.path;
    const within =
      prefix === "/" ||
      path === prefix ||
      path.startsWith(prefix.endsWith("/") ? prefix : `${prefix}/`) ||
      (prefix.endsWith("/") && path === prefix.slice(0, -1));
    if (!within) return false;
  }
  for (const [name, needle] of Object.entries(match.headerContains ?? {})) {
    const value = facts.headers[name.toLowerCase()];
    if (value === undefined || !value.includes(needle)) return false;
  }
  if (match.maxBodySize !== undefined && facts.bodySize > match.maxBodySize) return false;
  if (match.mcp && !mcpMatches(match.mcp, facts.mcp)) return false;
  return true;
}

/**
 * Whether a request's MCP facts fit a `match.mcp` (grants and meters alike):
 * each field a glob or a list of globs; a tool pattern needs a `tools/call`.
 */
export function mcpMatches(match: McpMatch, mcp: McpFacts | null): boolean {
  if (!mcp) return false;
  const methods = list(match.method);
  if (methods && !methods.some((pattern) => globMatches(pattern, mcp.method))) return false;
  const tools = list(match.tool);
  if (tools) {
    const tool = mcp.tool;
    if (tool === undefined || !tools.some((pattern) => globMatches(pattern, tool))) return false;
  }
  return true;
}

export function judge(grants: ScopedGrant[], facts: RequestFacts, phase: Phase): Decision {
  for (const grant of grants) {
    if (!scopeApplies(grant.scope, facts.subject)) continue;
    // a grant limited to a class of channels is not there for a run started elsewhere
    if (grant.channels && !classAdmits(grant.channels, facts.origins)) continue;
    if (!matches(grant, facts, phase)) continue;
    // a rule for a class of channels holds only for a channel recorded in that class
    if (!surfaceClassAdmits(grant, facts.path)) continue;
    if (phase === "request" && grant.verdict === "tunnel") {
      // a tunnel grant only ever pipes raw bytes; an inner request it matches is refused
      return {
        verdict: "deny",
        rule: grant,
        hint: `"${grant.name}" is a tunnel grant: it passes raw connections, not intercepted requests`,
      };
    }
    return {
      verdict: grant.verdict,
      rule: grant,
      hint: grant.verdict === "deny" ? DEFAULT_DENY_HINT : "",
    };
  }
  return {
    verdict: "deny",
    rule: undefined,
    hint:
      classHint(grants, facts, phase) ??
      ungrantedConnectionHint(grants, facts, phase) ??
      methodHint(grants, facts, phase),
  };
}

/** A grant would allow this but only for runs started from other channels: the refusal names both. */
function classHint(grants: ScopedGrant[], facts: RequestFacts, phase: Phase): string | undefined {
  const near = grants.find(
    (grant) =>
      grant.verdict === "allow" &&
      grant.channels !== undefined &&
      scopeApplies(grant.scope, facts.subject) &&
      !classAdmits(grant.channels, facts.origins) &&
      matches(grant, facts, phase),
  );
  if (!near?.channels) return undefined;
  const from = facts.origins?.length ? facts.origins.join(", ") : "no channel";
  return `"${near.name}" allows this only for runs started from ${classSaid(near.channels)}; this run started from ${from} (${near.source})`;
}

/**
 * A connection covers this host but is granted to others: the refusal says so,
 * and what would change it, rather than leaving a worker to guess at methods.
 */
function ungrantedConnectionHint(
  grants: ScopedGrant[],
  facts: RequestFacts,
  phase: Phase,
): string | undefined {
  const near = grants.find(
    (grant) =>
      grant.verdict === "allow" &&
      grant.name.startsWith("connection:") &&
      !scopeApplies(grant.scope, facts.subject) &&
      matches(grant, facts, phase),
  );
  if (!near) return undefined;
  const connection = near.name.slice("connection:".length);
  const worker = facts.subject?.startsWith("org/") ? facts.subject.slice(4) : "<worker>";
  return `no grant lets ${facts.subject ?? "an unknown caller"} reach ${facts.host}: "${near.name}" covers it but is not granted to this worker — the admin can run: roster connection grant ${connection} ${worker} (${near.source})`;
}

function methodHint(grants: ScopedGrant[], facts: RequestFacts, phase: Phase): string {
  if (phase !== "request") return DEFAULT_DENY_HINT;
  const near = grants.find(
    (grant) =>
      grant.verdict === "allow" &&
      scopeApplies(grant.scope, facts.subject) &&
      matches(grant, facts, phase, true),
  );
  if (!near) return DEFAULT_DENY_HINT;
  const allowed = (list(near.match?.method) ?? ["*"]).join(", ");
  return `${facts.method} ${facts.host} is blocked by method, not host: "${near.name}" allows ${allowed} — the admin can widen match.method on the "${near.name}" grant (${near.source})`;
}

/**
 * Whether a grant names this host exactly (no wildcard): the operator's way of
 * saying "this internal address, on purpose", which lifts the SSRF guard.
 */
export function grantNamesHost(
  grant: { match?: { host?: string | string[] } },
  host: string,
): boolean {
  return (list(grant.match?.host) ?? []).some(
    (pattern) => !pattern.includes("*") && hostName(pattern) === hostName(host),
  );
}
