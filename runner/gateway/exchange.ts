import type { IncomingMessage, ServerResponse } from "node:http";
import { hostName } from "../config/host-name.ts";
import { ACTIONS_HOST, type ActionHandler } from "./action-host.ts";
import type { AuditLog, AuditOutcome } from "./audit.ts";
import type { BodyBound, BodyBudget } from "./body-budget.ts";
import { overBudgetRefusal, refuseAndLinger, tooLargeRefusal } from "./body-refusal.ts";
import type { Budgets } from "./budget.ts";
import type { ClosedPorts } from "./closed-ports.ts";
import type { ConfigSource } from "./config-source.ts";
import type { Identity } from "./identity.ts";
import { bodyNeeded, type Decision, grantNamesHost, judge } from "./judge.ts";
import { budgetRefusal, MODEL_CURRENCIES, meterFor, settleUsage } from "./model-meter.ts";
import { denied, type Refusal, sendRefusal } from "./refusals.ts";
import { relayBody } from "./relay.ts";
import { declaredLength, readBody, streamBody } from "./request-body.ts";
import {
  flattenHeaders,
  liftMcp,
  normalisePath,
  type Protocol,
  type RequestFacts,
} from "./request-facts.ts";
import { findSsrfRefusal, literalRefusal } from "./ssrf.ts";
import { HOP_BY_HOP, UpstreamError, type Upstreams } from "./upstreams.ts";
import { isModelCall } from "./usage.ts";
import { readCredential, renderInjection, templatesFor } from "./vault.ts";

/**
 * One request through the door: read it, judge it, meter it, inject the real
 * credential, forward it, and write down what happened — exactly one audit
 * line per request, whatever the outcome (one DecisionLine owns it), written
 * when the outcome is known: at the refusal, or when the body has ended,
 * been cut short or been abandoned.
 */
export interface Target {
  protocol: Protocol;
  host: string;
  port: number;
}

export interface ExchangeDeps {
  config: ConfigSource;
  audit: AuditLog;
  budgets: Budgets;
  upstreams: Upstreams;
  actions: ActionHandler;
  vaultDir: string;
  maxBodyBytes: number;
  /** Bytes of request bodies held for judging, bounded per box and overall. */
  bodies: BodyBudget;
  /** Host services no box may reach (the console), checked before any grant. */
  closed: ClosedPorts;
}

/** What the judge decided plus the headers to inject, or a refusal. */
type Ruling =
  | { kind: "refuse"; refusal: Refusal; decision: Decision | undefined; note?: string }
  | {
      kind: "forward";
      decision: Decision;
      inject: Map<string, string>;
      spend: Record<string, number>;
      allowInternal: boolean;
      /** A model call: its reported usage is metered from the response. */
      model: boolean;
    };

export function buildFacts(
  req: IncomingMessage,
  target: Target,
  identity: Identity | undefined,
  rawPath: string,
  bodySize: number,
): RequestFacts {
  const queryAt = rawPath.indexOf("?");
  const path = queryAt >= 0 ? rawPath.slice(0, queryAt) : rawPath;
  return {
    subject: identity?.subject,
    runId: identity?.runId,
    protocol: target.protocol,
    method: (req.method ?? "GET").toUpperCase(),
    host: hostName(target.host),
    port: target.port,
    path: normalisePath(path || "/"),
    query: queryAt >= 0 ? rawPath.slice(queryAt + 1) : "",
    headers: flattenHeaders(req.headers),
    bodySize,
    mcp: null,
  };
}

/** Judges, meters and prepares injection; shared by plain requests and WebSocket handshakes. */
export function rule(deps: ExchangeDeps, facts: RequestFacts, body: Buffer): Ruling {
  const config = deps.config.get();
  const broken = deps.config.brokenReason(config);
  if (broken) return { kind: "refuse", refusal: denied(undefined, broken), decision: undefined };
  const closed = deps.closed.reason(facts.host, facts.port);
  if (closed)
    return {
      kind: "refuse",
      refusal: denied("closed", closed, "denied by gateway (a host service no box may reach)"),
      decision: undefined,
    };
  const mcp = liftMcp(facts.headers["content-type"], body);
  if (mcp === "batch") {
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
    };
  }
  facts.mcp = mcp;
  const decision = judge(config.grants, facts, "request");
  if (decision.verdict !== "allow" || !decision.rule) {
    return { kind: "refuse", refusal: denied(decision.rule?.name, decision.hint), decision };
  }
  const grant = decision.rule;
  const spend = deps.budgets.spendFor({ rule: grant.name, host: facts.host, method: facts.method });
  // a model call starts only while the tokens and usd windows have room (checked before
  // any fixed spend is charged); the one that crosses a cap finishes, the next is refused
  const model = isModelCall(facts.method, facts.path);
  const modelOver =
    model && facts.subject ? deps.budgets.check(facts.subject, MODEL_CURRENCIES) : undefined;
  const over = modelOver ?? (facts.subject ? deps.budgets.charge(facts.subject, spend) : undefined);
  if (over)
    return { kind: "refuse", decision, note: "budget", refusal: budgetRefusal(grant.name, over) };
  let inject = new Map<string, string>();
  if (grant.inject) {
    const credential = readCredential(deps.vaultDir, grant.inject.credential);
    inject = credential
      ? renderInjection(templatesFor(grant.inject), credential, facts.host)
      : inject;
    if (!credential || inject.size === 0) {
      return {
        kind: "refuse",
        decision,
        note: "credential-outage",
        refusal: {
          status: 503,
          verdict: "credential-outage",
          rule: grant.name,
          body: {
            error: `credential "${grant.inject.credential}" is not available`,
            rule: grant.name,
            hint: `the operator has to store it (roster login, or data/vault/${grant.inject.credential}.json); nothing was sent`,
          },
        },
      };
    }
  }
  const named = grantNamesHost(grant, facts.host);
  const literal = literalRefusal(facts.host, named);
  if (literal) {
    return {
      kind: "refuse",
      decision,
      refusal: denied(grant.name, literal.message, "denied by gateway (internal address)"),
    };
  }
  return { kind: "forward", decision, inject, spend, allowInternal: named, model };
}

/** The audit line for a refusal; budget and credential refusals were allowed by a rule first. */
export function refusalOutcome(ruling: Extract<Ruling, { kind: "refuse" }>): AuditOutcome {
  const { refusal } = ruling;
  const detail = refusal.body.detail;
  return {
    verdict: ruling.note ? "allow" : "deny",
    // a refusal before any grant (a closed host service) names its own rule
    rule: ruling.decision?.rule?.name ?? refusal.rule,
    status: refusal.status,
    ...(ruling.note ? { note: ruling.note } : {}),
    ...(ruling.note === "budget" && typeof detail === "string"
      ? { budget: { detail, retry_after_secs: refusal.retryAfterSeconds ?? 0 } }
      : {}),
  };
}

export function forwardHeaders(
  headers: IncomingMessage["headers"],
  inject: Map<string, string>,
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (value === undefined || HOP_BY_HOP.has(lower) || inject.has(lower)) continue;
    out[lower] = value;
  }
  for (const [name, value] of inject) out[name] = value;
  return out;
}

export async function handleRequest(
  deps: ExchangeDeps,
  req: IncomingMessage,
  res: ServerResponse,
  target: Target,
  identity: Identity | undefined,
  rawPath: string,
): Promise<void> {
  const declared = declaredLength(req);
  const facts = buildFacts(req, target, identity, rawPath, declared ?? 0);
  if (declared !== undefined && declared > deps.maxBodyBytes) {
    return refuseBody(deps, req, facts, tooLargeRefusal(deps.maxBodyBytes), "body too large");
  }
  // A body is read whole (within the body budget) when something must read it:
  // the action host, a rule on its MCP facts, or its size when no Content-Length
  // says it (an upload is never forwarded before it is known to be in bounds);
  // and a small one, as cheap to hold as to stream (a stalled upload is then
  // answered 408 before anything is forwarded). A large body no rule reads
  // streams through, its size known from the header.
  const hasBody =
    declared === undefined ? req.headers["transfer-encoding"] !== undefined : declared > 0;
  const actions = facts.host === ACTIONS_HOST;
  const needed =
    hasBody &&
    (actions ||
      declared === undefined ||
      declared <= STREAM_ABOVE_BYTES ||
      bodyNeeded(deps.config.get().grants, facts));
  const held = needed
    ? await holdBody(deps, req, facts)
    : { body: EMPTY, release: () => undefined };
  if (!held) return;
  try {
    if (actions) return await answerAction(deps, res, facts, held.body, identity);
    await forward(deps, req, res, target, facts, rawPath, held, hasBody && !needed);
  } finally {
    held.release();
  }
}

const EMPTY = Buffer.alloc(0);

/** Bodies up to this size are read whole before judging; larger ones stream when no rule reads them. */
export const STREAM_ABOVE_BYTES = 1024 * 1024;

interface HeldBody {
  body: Buffer;
  /** Gives the bytes back to the body budget (once the upstream has them). */
  release(): void;
}

/**
 * Reads a body that must be judged, within the body budget; on a refusal (too
 * large, over the budget) answers it and resolves to undefined.
 */
async function holdBody(
  deps: ExchangeDeps,
  req: IncomingMessage,
  facts: RequestFacts,
): Promise<HeldBody | undefined> {
  const box = facts.runId ?? "unidentified";
  let taken = 0;
  let bound: BodyBound | undefined;
  const release = () => {
    deps.bodies.give(box, taken);
    taken = 0;
  };
  const read = await readBody(req, deps.maxBodyBytes, (bytes) => {
    bound = deps.bodies.take(box, bytes);
    if (bound) return false;
    taken += bytes;
    return true;
  });
  if (read.kind === "body") {
    facts.bodySize = read.body.length;
    return { body: read.body, release };
  }
  release();
  if (read.kind === "aborted") return undefined;
  facts.bodySize = read.size;
  if (read.kind === "too-large") {
    refuseBody(deps, req, facts, tooLargeRefusal(deps.maxBodyBytes), "body too large");
  } else {
    const { perBox, overall } = deps.bodies;
    refuseBody(
      deps,
      req,
      facts,
      overBudgetRefusal(bound ?? "overall", perBox, overall),
      `request bodies held for judging at the ${bound ?? "overall"} bound`,
    );
  }
  return undefined;
}

/** A body refusal: audited, answered, and the rest of the upload read and dropped (body-refusal.ts). */
function refuseBody(
  deps: ExchangeDeps,
  req: IncomingMessage,
  facts: RequestFacts,
  refusal: Refusal,
  note: string,
): void {
  deps.audit.line(facts).write({ verdict: "deny", rule: undefined, status: refusal.status, note });
  refuseAndLinger(req, refusal);
}

async function answerAction(
  deps: ExchangeDeps,
  res: ServerResponse,
  facts: RequestFacts,
  body: Buffer,
  identity: Identity | undefined,
): Promise<void> {
  const reply = await deps.actions.handle({
    method: facts.method,
    path: facts.path,
    headers: facts.headers,
    body,
    caller: identity,
  });
  const text = JSON.stringify(reply.body);
  res.writeHead(reply.status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}

async function forward(
  deps: ExchangeDeps,
  req: IncomingMessage,
  res: ServerResponse,
  target: Target,
  facts: RequestFacts,
  rawPath: string,
  held: HeldBody,
  stream: boolean,
): Promise<void> {
  const line = deps.audit.line(facts);
  const ruling = rule(deps, facts, held.body);
  if (ruling.kind === "refuse") {
    line.write(refusalOutcome(ruling));
    sendRefusal(res, ruling.refusal);
    return;
  }

  const ruleName = ruling.decision.rule?.name;
  const injected = [...ruling.inject.keys()];
  const counted = stream ? streamBody(req) : undefined;
  let reply: Awaited<ReturnType<Upstreams["send"]>>;
  try {
    reply = await deps.upstreams.send(target, ruling.allowInternal, {
      method: facts.method,
      path: rawPath || "/",
      headers: forwardHeaders(req.headers, ruling.inject),
      body: counted ?? held.body,
    });
  } catch (error) {
    const refusal = upstreamRefusal(error, ruleName);
    line.write({
      verdict: refusal.status === 403 ? "deny" : "allow",
      rule: ruleName,
      status: refusal.status,
      note: String(refusal.body.error),
    });
    sendRefusal(res, refusal);
    return;
  }
  // an upgrade answer to a plain request can't be relayed: drop it
  if (reply.kind === "upgrade") {
    reply.socket.destroy();
    line.write({ verdict: "allow", rule: ruleName, status: 502, note: "unexpected upgrade" });
    sendRefusal(res, {
      status: 502,
      body: { error: "upstream: unexpected 101", rule: ruleName ?? null },
    });
    return;
  }
  const { response } = reply;
  const status = response.statusCode ?? 502;
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(response.headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name.toLowerCase())) headers[name] = value;
  }
  line.hold({ verdict: "allow", rule: ruleName, status, spend: ruling.spend, injected });
  if (res.destroyed) {
    // the box left while the upstream was answering
    response.destroy();
    line.finish({
      outcome: "aborted",
      bytes: 0,
      note: "the box closed the connection before the response",
    });
    return;
  }
  try {
    res.writeHead(status, headers);
    // a body not here yet: the head goes out now, so a long-poll or an event stream shows the
    // box its status at once, and a body that breaks before its first byte is seen as cut; a
    // body already here goes out with the head in one write (one TLS record, one syscall)
    if (response.readableLength === 0 && !response.complete) res.flushHeaders();
  } catch (error) {
    // a status or header Node won't repeat (a status under 100, a control character)
    response.destroy();
    const detail = `upstream: unusable response head (${error instanceof Error ? error.message : String(error)})`;
    line.write({ verdict: "allow", rule: ruleName, status: 502, note: detail });
    sendRefusal(res, { status: 502, body: { error: detail, rule: ruleName ?? null } });
    return;
  }
  // a model's answer is read on the side for the usage it reports; the line waits for it
  const meter = ruling.model && status < 300 ? meterFor(response.headers) : undefined;
  await relayBody(
    response,
    res,
    deps.upstreams.options.bodyIdleTimeoutMs,
    (transfer) => {
      if (!meter) line.finish(transfer);
      // a spend that can't be recorded (disk full) still leaves the call's line
      else
        void settleUsage(meter, deps.budgets, facts.subject)
          .catch(() => undefined)
          .then((usage) => line.finish({ ...transfer, ...(usage ? { usage } : {}) }));
    },
    meter && ((chunk) => meter.push(chunk)),
  );
}

export function upstreamRefusal(error: unknown, rule: string | undefined): Refusal {
  const ssrf = findSsrfRefusal(error);
  if (ssrf) return denied(rule, `${ssrf.message}`, "denied by gateway (internal address)");
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

export function bracket(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}
