import type { ServerResponse } from "node:http";
import type { DecisionLine } from "../audit/audit.ts";
import type { Identity } from "../doors/identity.ts";
import { sendRefusal } from "../judging/refusals.ts";
import type { RequestFacts, Target } from "../judging/request-facts.ts";
import { heldResult, jsonRpcRequest, mcpRefusal } from "../mcp/answers.ts";
import type { ActionHandler } from "./action-host.ts";
import { refusalOutcome } from "./admission.ts";
import type { Refused } from "./ruling.ts";

/**
 * The two answers the gateway gives an MCP request itself, each on the
 * exchange's one audit line: a refusal re-said as a JSON-RPC error (when the
 * request is a JSON-RPC request with an id; anything else keeps its HTTP
 * refusal), and a gated tools/call filed on the approval desk and answered
 * "held for approval" at once.
 */

/** The note on the line of a refusal answered as a JSON-RPC error (after the refusal's own). */
export const JSON_RPC_ANSWERED = "answered as a JSON-RPC error (HTTP 200)";

/** The note of a call a gate grant held that the desk could not take: the grants said gate. */
export const GATE_NOT_HELD = "gated, not held";

/** Answers a refusal; an MCP request gets it as a JSON-RPC error so the client can read it. */
export function answerRefusal(
  res: ServerResponse,
  line: DecisionLine,
  ruling: Refused,
  facts: RequestFacts,
  body: Buffer,
): void {
  const outcome = refusalOutcome(ruling);
  const request = facts.mcp ? jsonRpcRequest(facts.headers, body) : undefined;
  if (!facts.mcp || !request) {
    line.write(outcome);
    sendRefusal(res, ruling.refusal);
    return;
  }
  // the line keeps the refusal's own status (what was decided); the note says how it went out
  const note = `${outcome.note ? `${outcome.note}; ` : ""}${JSON_RPC_ANSWERED}`;
  line.write({ ...outcome, note });
  sendRefusal(res, mcpRefusal(ruling.refusal, facts.mcp, request.id));
}

/** Files a held tools/call on the desk and tells the box at once, as a JSON-RPC result. */
export async function holdCall(
  actions: ActionHandler,
  res: ServerResponse,
  line: DecisionLine,
  held: { rule: string; tool: string; target: Target; rawPath: string; body: Buffer },
  facts: RequestFacts,
  identity: Identity | undefined,
): Promise<void> {
  const request = jsonRpcRequest(facts.headers, held.body);
  const refuse = (hint: string) => {
    const ruling: Refused = {
      kind: "refuse",
      decision: undefined,
      cause: `${GATE_NOT_HELD}: ${hint}`,
      refusal: {
        status: 403,
        verdict: "deny",
        rule: held.rule,
        body: { error: "denied by gateway (gate)", rule: held.rule, hint },
      },
    };
    answerRefusal(res, line, ruling, facts, held.body);
  };
  if (!request || !identity)
    return refuse(
      "a held call needs a JSON-RPC id and a run token, so its answer can find its way",
    );
  if (!actions.holdMcpCall) return refuse("this gateway has no approval desk to hold the call on");
  const { target } = held;
  const host = target.host.includes(":") ? `[${target.host}]` : target.host;
  let gateId: string;
  try {
    ({ gateId } = await actions.holdMcpCall({
      caller: identity,
      rule: held.rule,
      url: `${target.protocol}://${host}:${target.port}${held.rawPath || "/"}`,
      tool: held.tool,
      arguments: request.arguments,
    }));
  } catch (error) {
    return refuse(
      `the call could not be filed for approval (${error instanceof Error ? error.message : String(error)}); nothing was sent`,
    );
  }
  const text = JSON.stringify(heldResult(request.id, held.tool, gateId));
  line.write({ verdict: "gate", rule: held.rule, status: 200, note: `held as ${gateId}` });
  res.writeHead(200, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    "x-roster-verdict": "gate",
    "x-roster-rule": held.rule,
  });
  res.end(text);
}
