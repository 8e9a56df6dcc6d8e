import type { IncomingHttpHeaders } from "node:http";
import type { ScopedGrant } from "../../../ground/config/grant-schema.ts";
import { hostName } from "../../../ground/config/host-name.ts";
import {
  AUDIT_FULL_RULE,
  type AuditLog,
  type AuditOutcome,
  type DecisionLine,
} from "../audit/audit.ts";
import { type Credentials, RETRY_AFTER_MS } from "../credentials/inject.ts";
import { renderInjection, templatesFor } from "../credentials/vault.ts";
import type { Identity } from "../doors/identity.ts";
import type { Decision } from "../judging/judge.ts";
import { denied, type Refusal } from "../judging/refusals.ts";
import {
  flattenHeaders,
  normalisePath,
  type RequestFacts,
  type Target,
} from "../judging/request-facts.ts";
import type { ConfigSource } from "../settings/config-source.ts";
import { type BudgetBook, type MeterReading, unmeteredNote } from "../spend/budget.ts";
import type { Answer } from "../spend/meter-cel.ts";
import { budgetRefusal, MODEL_CURRENCIES } from "../spend/model-meter.ts";
import type { ClosedPorts } from "../upstream/closed-ports.ts";
import { UpstreamError } from "../upstream/pools.ts";
import { findSsrfRefusal } from "../upstream/ssrf.ts";
import { type ConnectRuling, type Refused, ruleOn, ruleOnConnect } from "./ruling.ts";

/**
 * The gateway's one admission sequence. Whatever arrives — a CONNECT, a plain
 * absolute-form request, a WebSocket upgrade, a request inside a tunnel — its
 * facts are built here (requestFacts) and judged here (admit), in one order:
 * the action host (the gateway's own), a broken config, a closed host service,
 * an MCP batch, the grants (a gate grant holds an MCP tool call for the
 * desk), the budgets, the credential (refreshed first when
 * it is about to expire), the SSRF guard. Every refusal it makes
 * is written by the caller's one DecisionLine (refusalOutcome), and a failed
 * upstream is answered and audited in one place (upstreamFailure).
 */
export interface AdmissionDeps {
  config: ConfigSource;
  audit: AuditLog;
  budgets: BudgetBook;
  /** The vault, read when a request is forwarded (OAuth tokens refreshed on the way). */
  credentials: Credentials;
  /** Host services no box may reach (the console), checked before any grant. */
  closed: ClosedPorts;
}

/** What is known of a request when it arrives, before any of its body. */
export interface Arrival {
  target: Target;
  method: string;
  /** As sent: path and query (empty for a CONNECT). */
  rawPath: string;
  headers: IncomingHttpHeaders;
  identity: Identity | undefined;
  bodySize: number;
}

/** The one builder of a request's facts (request-facts.ts says what each is). */
export function requestFacts(arrival: Arrival): RequestFacts {
  const { rawPath } = arrival;
  const queryAt = rawPath.indexOf("?");
  const path = queryAt >= 0 ? rawPath.slice(0, queryAt) : rawPath;
  return {
    subject: arrival.identity?.subject,
    runId: arrival.identity?.runId,
    origins: arrival.identity?.origins,
    ...(arrival.identity?.actor ? { actor: arrival.identity.actor } : {}),
    protocol: arrival.target.protocol,
    method: arrival.method.toUpperCase(),
    host: hostName(arrival.target.host),
    port: arrival.target.port,
    path: arrival.method.toUpperCase() === "CONNECT" ? "" : normalisePath(path || "/"),
    query: queryAt >= 0 ? rawPath.slice(queryAt + 1) : "",
    headers: flattenHeaders(arrival.headers),
    bodySize: arrival.bodySize,
    mcp: null,
  };
}

/** The facts of a parsed HTTP request: a plain one, one inside a tunnel, an upgrade. */
export function requestFactsOf(
  req: { method?: string | undefined; headers: IncomingHttpHeaders },
  where: { target: Target; identity: Identity | undefined; rawPath: string },
  bodySize: number,
): RequestFacts {
  return requestFacts({ ...where, method: req.method ?? "GET", headers: req.headers, bodySize });
}

/** How a request arrived: a CONNECT (judged for a raw tunnel), a request, or a WebSocket upgrade. */
export type Entry = "connect" | "request" | "upgrade";

/** What a CONNECT is admitted as: a raw tunnel a grant passes, or a tunnel whose requests are judged inside. */
export type ConnectAdmission = ConnectRuling;

/** What a request (plain, upgrade, or inside a tunnel) is admitted as. */
export type RequestAdmission =
  | Refused
  /** A request to the action host, answered by the gateway itself. */
  | { kind: "action" }
  /** An MCP tools/call a `verdict = "gate"` grant holds for the approval desk. */
  | { kind: "gate"; decision: Decision; tool: string }
  | {
      kind: "forward";
      decision: Decision;
      inject: Map<string, string>;
      spend: Record<string, number>;
      allowInternal: boolean;
      /** A model call: its reported usage is metered from the response. */
      model: boolean;
      /** For its audit line: the meters that could not be computed for it. */
      note?: string;
      /** Its answer meters' spend, once its answer has ended (ruling.ts). */
      settle?: (answer: Answer) => MeterReading;
    };

/**
 * The one judgement: every way in, one order of checks. `body` is what was read
 * of it (maybe nothing). A request's may wait for its credential's refresh.
 */
export function admit(
  deps: AdmissionDeps,
  facts: RequestFacts,
  entry: "connect",
  body: Buffer,
): ConnectAdmission;
export function admit(
  deps: AdmissionDeps,
  facts: RequestFacts,
  entry: "request" | "upgrade",
  body: Buffer,
): Promise<RequestAdmission>;
export function admit(
  deps: AdmissionDeps,
  facts: RequestFacts,
  entry: Entry,
  body: Buffer,
): ConnectAdmission | Promise<RequestAdmission> {
  return entry === "connect" ? admitConnect(deps, facts) : admitRequest(deps, facts, body, entry);
}

function admitConnect(deps: AdmissionDeps, facts: RequestFacts): ConnectAdmission {
  // a run whose audit is full is never piped raw: the tunnel is opened and each
  // request inside it refused on its own (as for a closed service or a broken config)
  if (deps.audit.isFull(facts.runId)) return { kind: "intercept" };
  const config = deps.config.get();
  return ruleOnConnect(
    {
      config,
      broken: deps.config.brokenReason(config),
      closed: deps.closed.reason(facts.host, facts.port),
    },
    facts,
  );
}

async function admitRequest(
  deps: AdmissionDeps,
  facts: RequestFacts,
  body: Buffer,
  entry: "request" | "upgrade",
): Promise<RequestAdmission> {
  // a run past its share of the audit log is served nothing, the action host included
  if (deps.audit.isFull(facts.runId))
    return { kind: "refuse", refusal: auditFullRefusal(), decision: undefined };
  const config = deps.config.get();
  const ruling = ruleOn(
    {
      config,
      broken: deps.config.brokenReason(config),
      closed: deps.closed.reason(facts.host, facts.port),
    },
    facts,
    body,
    entry,
  );
  if (ruling.kind !== "allow") return ruling;
  const { decision, grant, spend, model, unmetered, later, settle } = ruling;
  // a model call starts only while the tokens and usd windows have room (checked before
  // any fixed spend is charged); the one that crosses a cap finishes, the next is refused
  const modelOver =
    model && facts.subject ? await deps.budgets.check(facts.subject, MODEL_CURRENCIES) : undefined;
  // a meter that failed spends nothing, but its used-up windows still refuse (budget.ts);
  // an answer meter's windows need room now, as a model call's do
  const checked = [...unmetered.flatMap((failure) => failure.currencies), ...later];
  const over =
    modelOver ??
    (facts.subject
      ? await deps.budgets.charge(facts.subject, spend, Date.now(), checked)
      : undefined);
  if (over)
    return { kind: "refuse", decision, note: "budget", refusal: budgetRefusal(grant.name, over) };
  // a page reads as the run but never with the run's credentials (caller.ts)
  const inject = facts.actor
    ? new Map<string, string>()
    : await injectionFor(deps, decision, grant, facts.host, facts.runId);
  if (!(inject instanceof Map)) return inject;
  if (ruling.literal) return { kind: "refuse", decision, refusal: ruling.literal };
  const note = unmeteredNote(unmetered);
  return {
    kind: "forward",
    decision,
    inject,
    spend,
    allowInternal: ruling.named,
    model,
    ...(note ? { note } : {}),
    ...(settle ? { settle } : {}),
  };
}

/** The door serves nothing it can't record: a run past its share of the audit log (audit.ts). */
function auditFullRefusal(): Refusal {
  return {
    ...denied(
      AUDIT_FULL_RULE,
      "this run has made more requests than the audit log keeps for one run ([gateway] audit_max_per_run): the door refuses the rest of them",
      "denied by gateway (this run's audit is full)",
    ),
    status: 429,
  };
}

/**
 * The headers the grant injects, its credential read (refreshed first when it
 * is about to expire); a refusal when the credential can't be had.
 */
async function injectionFor(
  deps: AdmissionDeps,
  decision: Decision,
  grant: ScopedGrant,
  host: string,
  runId: string | undefined,
): Promise<Map<string, string> | Refused> {
  if (!grant.inject) return new Map();
  const name = grant.inject.credential;
  const ready = await deps.credentials.ready(name, runId);
  if (ready.kind === "unreadable")
    return credentialOutage(
      decision,
      grant.name,
      ready.reason,
      "nothing was sent; the gateway needs the vault key the file was sealed with (ROSTER_VAULT_KEY_FILE)",
    );
  if (ready.kind === "refresh-failed")
    return credentialOutage(
      decision,
      grant.name,
      `credential "${name}" could not be refreshed: ${ready.reason}`,
      `nothing was sent; the gateway asks again in ${RETRY_AFTER_MS / 1000} s, and at once when data/vault/${name}.json gets a new refresh token (a revoked one needs the operator to sign in again)`,
    );
  const inject =
    ready.kind === "ok"
      ? renderInjection(templatesFor(grant.inject), ready.credential, host)
      : new Map<string, string>();
  if (inject.size === 0)
    return credentialOutage(
      decision,
      grant.name,
      `credential "${name}" is not available`,
      `the operator has to store it (roster login, or data/vault/${name}.json); nothing was sent`,
    );
  return inject;
}

/** A credential the grant injects can't be had: 503, nothing sent, the credential named. */
function credentialOutage(decision: Decision, rule: string, error: string, hint: string): Refused {
  return {
    kind: "refuse",
    decision,
    note: "credential-outage",
    refusal: {
      status: 503,
      verdict: "credential-outage",
      rule,
      body: { error, rule, hint },
    },
  };
}

/** The audit line for a refusal; budget and credential refusals were allowed by a rule first. */
export function refusalOutcome(ruling: Refused): AuditOutcome {
  const { refusal } = ruling;
  const detail = refusal.body.detail;
  return {
    verdict: ruling.note ? "allow" : "deny",
    // a refusal before any grant (a closed host service) names its own rule
    rule: ruling.decision?.rule?.name ?? refusal.rule,
    status: refusal.status,
    ...(ruling.note || ruling.cause ? { note: ruling.note ?? ruling.cause } : {}),
    ...(ruling.note === "budget" && typeof detail === "string"
      ? { budget: { detail, retry_after_secs: refusal.retryAfterSeconds ?? 0 } }
      : {}),
  };
}

/**
 * The one upstream-failure path: what a failed upstream call (connect, TLS,
 * SSRF guard, timeouts) is answered with, written on the exchange's line.
 */
export function upstreamFailure(
  line: DecisionLine,
  error: unknown,
  rule: string | undefined,
  /** What the grant had said: a request allowed, or a raw tunnel. */
  granted: "allow" | "tunnel" = "allow",
): Refusal {
  const refusal = upstreamRefusal(error, rule);
  line.write({
    verdict: refusal.status === 403 ? "deny" : granted,
    // a closed host service found at connect time is audited as the closed rule, with its reason
    rule: refusal.rule ?? rule,
    status: refusal.status,
    note: String(refusal.body.hint ?? refusal.body.error),
  });
  return refusal;
}

export function upstreamRefusal(error: unknown, rule: string | undefined): Refusal {
  const ssrf = findSsrfRefusal(error);
  if (ssrf) return denied(ssrf.rule ?? rule, ssrf.message, ssrf.title);
  if (error instanceof UpstreamError && error.kind !== "failed") {
    return { status: 504, body: { error: error.message, rule: rule ?? null } };
  }
  const detail = error instanceof Error ? error.message : String(error);
  return {
    status: 502,
    body: {
      error: detail.startsWith("upstream:") ? detail : `upstream: ${detail}`,
      rule: rule ?? null,
    },
  };
}
