import type { CompiledMeter } from "../../../ground/config/budget-cel.ts";
import type { ScopedGrant } from "../../../ground/config/grant-schema.ts";
import type { LoadedConfig } from "../../../ground/config/load.ts";
import { type Decision, grantNamesHost, judge } from "../judging/judge.ts";
import { denied, type Refusal } from "../judging/refusals.ts";
import type { McpFacts, RequestFacts } from "../judging/request-facts.ts";
import { type McpScope, mcpScope } from "../mcp/hosts.ts";
import { type McpReading, readMcp, recordedMcp } from "../mcp/reading.ts";
import { type MeteredCall, type MeterReading, spendFor } from "../spend/budget.ts";
import type { Answer } from "../spend/meter-cel.ts";
import { isModelCall } from "../spend/usage.ts";
import { literalRefusal } from "../upstream/ssrf.ts";
import { ACTIONS_HOST } from "./action-host.ts";
import { pageRefusal } from "./caller.ts";
import { sentinelLeak } from "./sentinel-leak.ts";
import { upgradeRefused } from "./upgrades.ts";

/**
 * The door's ruling on a request, from the config alone: what admission
 * (admission.ts) decides before it touches anything that changes — a
 * run's audit share, the budgets' counts, the vault. The order is the
 * door's: a page's limits, the action host (the gateway's own), a broken
 * config, a closed host service, an MCP batch or a body it can't read, the
 * grants (a gate grant holds an MCP tool call for the desk), an upgrade the
 * grant does not pass, and which meters it would charge; last, the
 * sentinel tripwire (sentinel-leak.ts), which refuses whatever the rest said
 * when the request carries a box's sentinel where no credential replaces it.
 * `roster policy check` asks the same function, so what it says is what the
 * door does.
 */
export type Ruling =
  | Refused
  | { kind: "action" }
  | { kind: "gate"; decision: Decision; tool: string }
  | {
      kind: "allow";
      decision: Decision;
      grant: ScopedGrant;
      /** The spends the meters put on it before its answer, by currency. */
      spend: Record<string, number>;
      /** Meters whose CEL could not be computed for it: nothing spent, their currencies checked. */
      unmetered: MeterReading["failed"];
      /** Currencies its answer meters would spend: checked now, spent once the answer has ended. */
      later: string[];
      /** The answer meters' spend, once its answer has ended (only when it has any). */
      settle?: (answer: Answer) => MeterReading;
      /** A model call: its reported usage is metered from the response. */
      model: boolean;
      /** The grant names this host itself: an internal address it resolves to is let through. */
      named: boolean;
      /** An internal address literal no grant names: refused once the rest is done. */
      literal: Refusal | undefined;
    };

export type Refused = {
  kind: "refuse";
  refusal: Refusal;
  decision: Decision | undefined;
  /** Allowed by a rule, then refused for this (`budget`, `credential-outage`): audited as an allow. */
  note?: string;
  /** Refused whatever the grants say, for this (NOT_JUDGED): the audit line's note. */
  cause?: string;
};

/**
 * The notes of refusals no grant decided, so a reader of the audit log (a
 * replay) can tell them from a default deny, which has no note either.
 */
export const NOT_JUDGED = {
  broken: "not judged: the config is broken",
  batch: "not judged: a JSON-RPC batch",
  unreadable: "not judged: an MCP body the door can't read",
} as const;

/**
 * What the ruling reads a request's MCP message from: the body as sent (the
 * door, a policy check), or the MCP facts an audit line kept of it (a replay:
 * the body is gone). Recorded facts stand for a body the door read as one
 * message, or for none; a body it read as something else was refused and
 * noted (NOT_JUDGED), and one it never read can't be judged again where a
 * rule would read it now: the replay asks first (policy/replay-judge.ts).
 */
export type RulingBody = Buffer | { recordedMcp: McpFacts | null };

/** What the ruling reads: the config, and what makes it unusable or a host service closed. */
export interface RulingInput {
  config: LoadedConfig;
  /** Why the config can't be used (it is broken): everything is then denied. */
  broken: string | undefined;
  /** Why this host and port is a closed host service, if it is one. */
  closed: string | undefined;
}

export function ruleOn(
  input: RulingInput,
  facts: RequestFacts,
  body: RulingBody,
  entry: "request" | "upgrade",
): Ruling {
  const ruling = ruleOnConfig(input, facts, body, entry);
  if (ruling.kind === "action") return ruling;
  // a replay's body is gone: what its line kept is searched (credential headers are redacted there)
  const leak = sentinelLeak(input.config, facts, Buffer.isBuffer(body) ? body : undefined);
  return leak ? { kind: "refuse", refusal: leak, decision: undefined } : ruling;
}

function ruleOnConfig(
  input: RulingInput,
  facts: RequestFacts,
  body: RulingBody,
  entry: "request" | "upgrade",
): Ruling {
  const { config, broken, closed } = input;
  const page = pageRefusal(facts);
  if (page) return { kind: "refuse", refusal: page, decision: undefined };
  // the action host is the gateway's own: it answers whatever the grants say
  // (an upgrade to it is refused by the caller, on the same audit line)
  if (facts.host === ACTIONS_HOST) return { kind: "action" };
  if (broken)
    return {
      kind: "refuse",
      refusal: denied(undefined, broken),
      decision: undefined,
      cause: NOT_JUDGED.broken,
    };
  if (closed)
    return {
      kind: "refuse",
      refusal: denied("closed", closed, "denied by gateway (a host service no box may reach)"),
      decision: undefined,
    };
  const scope = mcpScope(config, facts.host);
  if (Buffer.isBuffer(body)) {
    const reading = readMcp(facts.headers, body, scope);
    const unjudged = unjudgedRefusal(reading, scope, facts.host);
    if (unjudged) return unjudged;
    facts.mcp = reading.kind === "message" ? reading.mcp : null;
  } else facts.mcp = recordedMcp(facts.headers, body.recordedMcp, scope);
  const decision = judge(config.grants, facts, "request");
  if (decision.verdict === "gate" && decision.rule)
    return gateRuling(decision, decision.rule, facts);
  if (decision.verdict !== "allow" || !decision.rule) {
    return { kind: "refuse", refusal: denied(decision.rule?.name, decision.hint), decision };
  }
  const grant = decision.rule;
  const upgrade = entry === "upgrade" ? upgradeRefused(facts, scope, grant) : undefined;
  if (upgrade) return { kind: "refuse", decision, refusal: upgrade };
  const named = grantNamesHost(grant, facts.host);
  const literal = literalRefusal(facts.host, named);
  return {
    kind: "allow",
    decision,
    grant,
    ...meterReading(config.meters, { ...facts, rule: grant.name }),
    model: isModelCall(facts.method, facts.path),
    named,
    literal: literal
      ? denied(grant.name, literal.message, "denied by gateway (internal address)")
      : undefined,
  };
}

/** What a call's meters spend before its answer, and how its answer meters will spend after. */
function meterReading(meters: CompiledMeter[], call: MeteredCall) {
  const { spend, failed, later } = spendFor(meters, call);
  return {
    spend,
    unmetered: failed,
    later,
    ...(later.length ? { settle: (answer: Answer) => spendFor(meters, call, answer) } : {}),
  };
}

/**
 * A gate holds a tool call for a human; anything else it matches is refused,
 * never forwarded (and a page's call is never held: only the run's own tool
 * calls reach the desk).
 */
function gateRuling(decision: Decision, rule: ScopedGrant, facts: RequestFacts): Ruling {
  const { mcp } = facts;
  if (mcp?.method === "tools/call" && mcp.tool !== undefined && !facts.actor)
    return { kind: "gate", decision, tool: mcp.tool };
  return {
    kind: "refuse",
    refusal: denied(
      rule.name,
      `"${rule.name}" is a gate grant: it holds MCP tools/call requests for approval and passes nothing else`,
    ),
    decision,
  };
}

/** A body the gateway won't forward because it can't judge it: a batch, or one it can't read. */
function unjudgedRefusal(reading: McpReading, scope: McpScope, host: string): Refused | undefined {
  if (reading.kind === "batch") {
    return {
      kind: "refuse",
      refusal: {
        status: 400,
        verdict: "deny",
        body: {
          error: "JSON-RPC batch refused",
          hint: "send one JSON-RPC message per request so each can be judged",
        },
      },
      decision: undefined,
      cause: NOT_JUDGED.batch,
    };
  }
  if (reading.kind !== "unreadable") return undefined;
  const where =
    scope === "mcp" ? `${host} speaks MCP` : "an MCP rule with no host reads every JSON body";
  return {
    kind: "refuse",
    refusal: denied(
      undefined,
      `${where}, and the gateway forwards only what it has judged: ${reading.reason}`,
      "denied by gateway (an MCP message it can't judge)",
    ),
    decision: undefined,
    cause: NOT_JUDGED.unreadable,
  };
}

/** What a CONNECT is admitted as, from the config alone: a raw tunnel a grant passes, or intercepted. */
export type ConnectRuling = { kind: "tunnel"; grant: ScopedGrant } | { kind: "intercept" };

/**
 * A CONNECT judged on its target: a broken config, a closed host service or
 * the action host is never piped raw (the tunnel is opened and each request
 * inside it refused or answered on its own); otherwise a tunnel grant passes
 * it raw and anything else is intercepted.
 */
export function ruleOnConnect(input: RulingInput, facts: RequestFacts): ConnectRuling {
  if (input.broken || input.closed || facts.host === ACTIONS_HOST) return { kind: "intercept" };
  const decision = judge(input.config.grants, facts, "connect");
  return decision.verdict === "tunnel" && decision.rule
    ? { kind: "tunnel", grant: decision.rule }
    : { kind: "intercept" };
}
