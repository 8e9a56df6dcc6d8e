import type { IncomingMessage, ServerResponse } from "node:http";
import { errorMessage } from "../../../ground/errors.ts";
import type { DecisionLine } from "../audit/audit.ts";
import type { BodyBound, BodyBudget } from "../bodies/budget.ts";
import { overBudgetRefusal, refuseAndLinger, tooLargeRefusal } from "../bodies/refusal.ts";
import { declaredLength, readBody, streamBody } from "../bodies/request-body.ts";
import type { Identity } from "../doors/identity.ts";
import { type Refusal, sendRefusal } from "../judging/refusals.ts";
import type { RequestFacts, Target } from "../judging/request-facts.ts";
import { type McpScope, mcpScope } from "../mcp/hosts.ts";
import { McpOutcomeTap } from "../mcp/outcome.ts";
import { mightBeJson } from "../mcp/reading.ts";
import { meterFor, settleAnswer, settleUsage } from "../spend/model-meter.ts";
import { HOP_BY_HOP, type Upstreams } from "../upstream/pools.ts";
import { relayBody } from "../upstream/relay.ts";
import { ACTION_HOST_RULE, ACTIONS_HOST, type ActionHandler } from "./action-host.ts";
import {
  type AdmissionDeps,
  admit,
  type RequestAdmission,
  requestFactsOf,
  upstreamFailure,
} from "./admission.ts";
import { answerRefusal, holdCall } from "./mcp-exchange.ts";

/**
 * One request through the door: read it, judge it, meter it, inject the real
 * credential, forward it, and write down what happened — exactly one audit
 * line per request, whatever the outcome (one DecisionLine owns it), written
 * when the outcome is known: at the refusal, or when the body has ended,
 * been cut short or been abandoned.
 */
export interface ExchangeDeps extends AdmissionDeps {
  upstreams: Upstreams;
  actions: ActionHandler;
  maxBodyBytes: number;
  /** Bytes of request bodies held for judging, bounded per box and overall. */
  bodies: BodyBudget;
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
  const facts = requestFactsOf(req, { target, identity, rawPath }, declared ?? 0);
  if (declared !== undefined && declared > deps.maxBodyBytes) {
    return refuseBody(deps, req, facts, tooLargeRefusal(deps.maxBodyBytes), "body too large");
  }
  // A body is read whole (within the body budget) when something must read it:
  // the action host, MCP judging (every body on a host that speaks MCP, any
  // that could be JSON where any host may: mcp/reading.ts), or its size when no Content-Length
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
      mcpRead(mcpScope(deps.config.get(), facts.host), facts.headers));
  // a request with no body is read to its (immediate) end here, as it always was: left
  // unread, Node dumps it when the response finishes, work and listeners on every request
  if (!hasBody) req.resume();
  const held = needed
    ? await holdBody(deps, req, facts)
    : { body: EMPTY, release: () => undefined };
  if (!held) return;
  try {
    const line = deps.audit.line(facts);
    const admission = await admit(deps, facts, "request", held.body);
    if (admission.kind === "action")
      return await answerAction(deps, res, line, facts, held.body, identity);
    if (admission.kind === "refuse") return answerRefusal(res, line, admission, facts, held.body);
    if (admission.kind === "gate") {
      const rule = admission.decision.rule?.name ?? "";
      const call = { rule, tool: admission.tool, target, rawPath, body: held.body };
      return await holdCall(deps.actions, res, line, call, facts, identity);
    }
    await forward(
      deps,
      req,
      res,
      { target, facts, rawPath, line, admission },
      held,
      hasBody && !needed,
    );
  } finally {
    held.release();
  }
}

const EMPTY = Buffer.alloc(0);

/** Whether MCP judging needs this body whatever its size (mcp/hosts.ts says how each host is read). */
function mcpRead(scope: McpScope, headers: Record<string, string>): boolean {
  return scope === "mcp" || (scope === "maybe" && mightBeJson(headers));
}

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

/** A body refusal: audited, answered, and the rest of the upload read and dropped (bodies/refusal.ts). */
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

/**
 * A request to the action host, answered by it and written on the request's
 * one audit line like any other: the run's share of the log counts it, and
 * what the host said (its status, and its reason when it refused) is there.
 */
async function answerAction(
  deps: ExchangeDeps,
  res: ServerResponse,
  line: DecisionLine,
  facts: RequestFacts,
  body: Buffer,
  identity: Identity | undefined,
): Promise<void> {
  const reply = await deps.actions
    .handle({
      method: facts.method,
      path: facts.path,
      headers: facts.headers,
      body,
      caller: identity,
    })
    .catch((error: unknown) => ({
      status: 500,
      body: { status: "error", error: `the action host failed: ${errorMessage(error)}` },
    }));
  line.write({
    verdict: reply.status < 400 ? "allow" : "deny",
    rule: ACTION_HOST_RULE,
    status: reply.status,
    ...(reply.status >= 400 ? { note: refusalReason(reply.body) } : {}),
  });
  const text = JSON.stringify(reply.body);
  res.writeHead(reply.status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}

/** An admitted request on its way: where it goes, what was judged, its one audit line. */
interface Admitted {
  target: Target;
  facts: RequestFacts;
  rawPath: string;
  line: DecisionLine;
  admission: Extract<RequestAdmission, { kind: "forward" }>;
}

async function forward(
  deps: ExchangeDeps,
  req: IncomingMessage,
  res: ServerResponse,
  admitted: Admitted,
  held: HeldBody,
  stream: boolean,
): Promise<void> {
  const { line, admission: ruling } = admitted;
  const ruleName = ruling.decision.rule?.name;
  const response = await sendUpstream(
    deps,
    req,
    res,
    admitted,
    stream ? streamBody(req) : held.body,
  );
  if (!response) return;
  const status = response.statusCode ?? 502;
  const injected = [...ruling.inject.keys()];
  line.hold({
    verdict: "allow",
    rule: ruleName,
    status,
    spend: ruling.spend,
    injected,
    ...(ruling.note ? { note: ruling.note } : {}),
  });
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
  if (!writeResponseHead(res, response, line, ruleName)) return;
  await relayAnswer(deps, res, response, admitted);
}

/**
 * The request sent on, with the credential injected; the upstream's response,
 * or undefined once the failure (or an upgrade nobody asked for) was refused.
 */
async function sendUpstream(
  deps: ExchangeDeps,
  req: IncomingMessage,
  res: ServerResponse,
  admitted: Admitted,
  body: Parameters<Upstreams["send"]>[2]["body"],
): Promise<IncomingMessage | undefined> {
  const { target, facts, rawPath, line, admission: ruling } = admitted;
  const ruleName = ruling.decision.rule?.name;
  let reply: Awaited<ReturnType<Upstreams["send"]>>;
  try {
    reply = await deps.upstreams.send(target, ruling.allowInternal, {
      method: facts.method,
      path: rawPath || "/",
      headers: forwardHeaders(req.headers, ruling.inject),
      body,
    });
  } catch (error) {
    sendRefusal(res, upstreamFailure(line, error, ruleName));
    return undefined;
  }
  // an upgrade answer to a plain request can't be relayed: drop it
  if (reply.kind === "upgrade") {
    reply.socket.destroy();
    line.write({ verdict: "allow", rule: ruleName, status: 502, note: "unexpected upgrade" });
    sendRefusal(res, {
      status: 502,
      body: { error: "upstream: unexpected 101", rule: ruleName ?? null },
    });
    return undefined;
  }
  return reply.response;
}

/** The upstream's status and headers (hop-by-hop ones dropped) to the box; false if unusable. */
function writeResponseHead(
  res: ServerResponse,
  response: IncomingMessage,
  line: DecisionLine,
  ruleName: string | undefined,
): boolean {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(response.headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name.toLowerCase())) headers[name] = value;
  }
  try {
    res.writeHead(response.statusCode ?? 502, headers);
    // a body not here yet: the head goes out now, so a long-poll or an event stream shows the
    // box its status at once, and a body that breaks before its first byte is seen as cut; a
    // body already here goes out with the head in one write (one TLS record, one syscall)
    if (response.readableLength === 0 && !response.complete) res.flushHeaders();
    return true;
  } catch (error) {
    // a status or header Node won't repeat (a status under 100, a control character)
    response.destroy();
    const detail = `upstream: unusable response head (${error instanceof Error ? error.message : String(error)})`;
    line.write({ verdict: "allow", rule: ruleName, status: 502, note: detail });
    sendRefusal(res, { status: 502, body: { error: detail, rule: ruleName ?? null } });
    return false;
  }
}

/** The body relayed; the audit line finished once it is, with a model's usage or a tool call's outcome. */
async function relayAnswer(
  deps: ExchangeDeps,
  res: ServerResponse,
  response: IncomingMessage,
  admitted: Admitted,
): Promise<void> {
  const { facts, line, admission: ruling } = admitted;
  const status = response.statusCode ?? 502;
  // a model's answer is read on the side for the usage it reports; the line waits for it
  const meter = ruling.model && status < 300 ? meterFor(response.headers) : undefined;
  // a tool call's answer, for the JSON-RPC error or tool failure it reports
  const tap =
    !meter && facts.mcp?.method === "tools/call"
      ? McpOutcomeTap.for(response.headers["content-type"])
      : undefined;
  await relayBody(
    response,
    res,
    deps.upstreams.options.bodyIdleTimeoutMs,
    (transfer) => {
      const mcpAnswer = tap?.finish();
      // the answer meters spend once it has ended, a model's usage known (model-meter.ts)
      const end = (usage?: Awaited<ReturnType<typeof settleUsage>>) =>
        line.finish({
          ...transfer,
          ...(mcpAnswer ? { mcp_answer: mcpAnswer } : {}),
          ...(usage ? { usage } : {}),
          ...settleAnswer(ruling.settle, deps.budgets, facts.subject, {
            status,
            bytes: transfer.bytes,
            usage,
          }),
        });
      if (!meter) end();
      // a spend that can't be recorded (disk full) still leaves the call's line
      else
        void settleUsage(meter, deps.budgets, facts.subject)
          .catch(() => undefined)
          .then(end);
    },
    meter ? (chunk) => meter.push(chunk) : tap && ((chunk) => tap.push(chunk)),
  );
}

/** The action host's reason for a refusal, for its audit line (cut there like every string). */
function refusalReason(body: unknown): string | undefined {
  if (!body || typeof body !== "object") return undefined;
  const { reason, error } = body as { reason?: unknown; error?: unknown };
  const said = typeof reason === "string" ? reason : error;
  return typeof said === "string" ? said : undefined;
}
