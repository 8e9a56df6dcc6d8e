import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { errors as undiciErrors } from "undici";
import { ACTIONS_HOST, type ActionHandler } from "./action-host.ts";
import type { AuditLog } from "./audit.ts";
import type { Budgets } from "./budget.ts";
import type { ConfigSource } from "./config-source.ts";
import type { Identity } from "./identity.ts";
import { type Decision, grantNamesHost, judge } from "./judge.ts";
import { denied, type Refusal, sendRefusal, writeRawRefusal } from "./refusals.ts";
import {
  flattenHeaders,
  liftMcp,
  normalisePath,
  type Protocol,
  type RequestFacts,
} from "./request-facts.ts";
import { findSsrfRefusal, literalRefusal } from "./ssrf.ts";
import { HOP_BY_HOP, type Upstreams } from "./upstreams.ts";
import { readCredential, renderInjection, templatesFor } from "./vault.ts";

/**
 * One request through the door: read it, judge it, meter it, inject the real
 * credential, forward it, and write down what happened — exactly one audit
 * line per request, whatever the outcome.
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
    };

export function buildFacts(
  req: IncomingMessage,
  target: Target,
  identity: Identity | undefined,
  rawPath: string,
  body: Buffer,
): RequestFacts {
  const queryAt = rawPath.indexOf("?");
  const path = queryAt >= 0 ? rawPath.slice(0, queryAt) : rawPath;
  return {
    subject: identity?.subject,
    runId: identity?.runId,
    protocol: target.protocol,
    method: (req.method ?? "GET").toUpperCase(),
    host: target.host.toLowerCase(),
    port: target.port,
    path: normalisePath(path || "/"),
    query: queryAt >= 0 ? rawPath.slice(queryAt + 1) : "",
    headers: flattenHeaders(req.headers),
    bodySize: body.length,
    mcp: null,
  };
}

/** Judges, meters and prepares injection; shared by plain requests and WebSocket handshakes. */
export function rule(deps: ExchangeDeps, facts: RequestFacts, body: Buffer): Ruling {
  const config = deps.config.get();
  const broken = deps.config.brokenReason(config);
  if (broken) return { kind: "refuse", refusal: denied(undefined, broken), decision: undefined };
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
  const over = facts.subject ? deps.budgets.charge(facts.subject, spend) : undefined;
  if (over) {
    return {
      kind: "refuse",
      decision,
      note: "budget",
      refusal: {
        status: 402,
        verdict: "budget",
        rule: grant.name,
        retryAfterSeconds: over.retryAfterSeconds,
        body: {
          error: "budget exceeded",
          detail: `${over.currency} over ${over.window} cap (${over.used.toFixed(4)}/${over.max.toFixed(4)})`,
          retry_after_secs: over.retryAfterSeconds,
          hint: "a budget window is used up — nothing is broken; retry after it resets",
        },
      },
    };
  }
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
  return { kind: "forward", decision, inject, spend, allowInternal: named };
}

/** One audit line for a refusal; budget and credential refusals were allowed by a rule first. */
export function recordRefusal(
  deps: ExchangeDeps,
  facts: RequestFacts,
  ruling: Extract<Ruling, { kind: "refuse" }>,
): void {
  deps.audit.record(facts, {
    verdict: ruling.note ? "allow" : "deny",
    rule: ruling.decision?.rule?.name,
    status: ruling.refusal.status,
    ...(ruling.note ? { note: ruling.note } : {}),
  });
}

async function readBody(req: IncomingMessage, max: number): Promise<Buffer | "too-large"> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) return "too-large";
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
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
  const body = await readBody(req, deps.maxBodyBytes);
  const facts = buildFacts(
    req,
    target,
    identity,
    rawPath,
    body === "too-large" ? Buffer.alloc(0) : body,
  );

  if (facts.host === ACTIONS_HOST) {
    const reply = await deps.actions.handle({
      method: facts.method,
      path: facts.path,
      headers: facts.headers,
      body: body === "too-large" ? Buffer.alloc(0) : body,
      caller: identity,
    });
    const text = JSON.stringify(reply.body);
    res.writeHead(reply.status, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(text),
    });
    res.end(text);
    return;
  }
  if (body === "too-large") {
    const refusal = denied(
      undefined,
      `request bodies over ${deps.maxBodyBytes} bytes are refused`,
      "request body too large",
    );
    refusal.status = 413;
    deps.audit.record(facts, {
      verdict: "deny",
      rule: undefined,
      status: 413,
      note: "body too large",
    });
    sendRefusal(res, refusal);
    return;
  }
  const ruling = rule(deps, facts, body);
  if (ruling.kind === "refuse") {
    recordRefusal(deps, facts, ruling);
    sendRefusal(res, ruling.refusal);
    return;
  }

  const ruleName = ruling.decision.rule?.name;
  const injected = [...ruling.inject.keys()];
  try {
    const upstream = await deps.upstreams.agent(ruling.allowInternal).request({
      origin: `${target.protocol}://${bracket(target.host)}:${target.port}`,
      path: rawPath || "/",
      method: facts.method as "GET",
      headers: forwardHeaders(req.headers, ruling.inject),
      body: body.length > 0 ? body : null,
    });
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(upstream.headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name.toLowerCase())) headers[name] = value;
    }
    deps.audit.record(facts, {
      verdict: "allow",
      rule: ruleName,
      status: upstream.statusCode,
      spend: ruling.spend,
      injected,
    });
    res.writeHead(upstream.statusCode, headers);
    for await (const chunk of upstream.body) {
      if (!res.write(chunk)) await new Promise((resolve) => res.once("drain", resolve));
    }
    res.end();
  } catch (error) {
    const refusal = upstreamRefusal(error, ruleName);
    if (!res.headersSent) {
      deps.audit.record(facts, {
        verdict: refusal.status === 403 ? "deny" : "allow",
        rule: ruleName,
        status: refusal.status,
        note: String(refusal.body.error),
      });
    }
    sendRefusal(res, refusal);
  }
}

export function upstreamRefusal(error: unknown, rule: string | undefined): Refusal {
  const ssrf = findSsrfRefusal(error);
  if (ssrf) return denied(rule, `${ssrf.message}`, "denied by gateway (internal address)");
  if (
    error instanceof undiciErrors.HeadersTimeoutError ||
    error instanceof undiciErrors.BodyTimeoutError
  ) {
    return { status: 504, body: { error: "upstream: no answer in time", rule: rule ?? null } };
  }
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const detail = cause?.code ?? cause?.message ?? (error as Error).message;
  return { status: 502, body: { error: `upstream: ${detail}`, rule: rule ?? null } };
}

export function bracket(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}

export function refuseUpgrade(socket: Duplex, refusal: Refusal): void {
  writeRawRefusal(socket, refusal);
}
