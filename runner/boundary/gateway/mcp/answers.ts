import type { Refusal } from "../judging/refusals.ts";
import type { McpFacts } from "../judging/request-facts.ts";
import { readMcp } from "./reading.ts";

/**
 * What the gateway answers an MCP client in the client's own protocol. A
 * refused JSON-RPC request gets HTTP 200 with a JSON-RPC error (the MCP
 * streamable HTTP transport turns any other status into a transport failure
 * the model can't read); a gated `tools/call` gets a JSON-RPC result saying
 * it is held for approval. Pure data, no sockets.
 */

/**
 * The JSON-RPC error code of a gateway refusal, in the server-defined range
 * and clear of the codes the MCP SDK gives meanings of its own (-32000
 * connection closed, -32001 request timeout, -32042): a client must read it
 * as a refusal, not as a call that timed out.
 */
export const MCP_REFUSED_CODE = -32050;

export type JsonRpcId = string | number;

/** The parts of a JSON-RPC request a held or refused call needs: its id and its tool arguments. */
export interface JsonRpcRequest {
  id: JsonRpcId;
  arguments: Record<string, unknown>;
}

/**
 * The request's id and arguments, read as it was judged (reading.ts);
 * undefined for a notification (no id) or a body that isn't one request.
 */
export function jsonRpcRequest(
  headers: Record<string, string>,
  body: Buffer,
): JsonRpcRequest | undefined {
  const read = readMcp(headers, body, "mcp");
  if (read.kind !== "message") return undefined;
  const message = read.message as { id?: unknown; params?: { arguments?: unknown } };
  const id = message.id;
  if (typeof id !== "string" && typeof id !== "number") return undefined;
  const args = message.params?.arguments;
  return {
    id,
    arguments:
      typeof args === "object" && args !== null && !Array.isArray(args)
        ? (args as Record<string, unknown>)
        : {},
  };
}

/**
 * A refusal re-said as a JSON-RPC error for the request `id`: the message
 * names what was refused, the rule and the hint; `data` keeps the refusal's
 * own fields for a client that reads them.
 */
export function mcpRefusal(refusal: Refusal, mcp: McpFacts, id: JsonRpcId): Refusal {
  const body = refusal.body;
  const what = mcp.tool ? `${mcp.method} ${mcp.tool}` : mcp.method;
  const named = typeof body.rule === "string" ? body.rule : refusal.rule;
  const rule = named ? `rule "${named}"` : "no rule allows it";
  const parts = [
    `${what} refused by the roster gateway (${rule})`,
    typeof body.error === "string" ? body.error : undefined,
    typeof body.detail === "string" ? body.detail : undefined,
    typeof body.hint === "string" ? `hint: ${body.hint}` : undefined,
  ].filter((part): part is string => Boolean(part));
  return {
    status: 200,
    ...(refusal.verdict ? { verdict: refusal.verdict } : {}),
    ...(refusal.rule ? { rule: refusal.rule } : {}),
    ...(refusal.retryAfterSeconds !== undefined
      ? { retryAfterSeconds: refusal.retryAfterSeconds }
      : {}),
    body: {
      jsonrpc: "2.0",
      id,
      error: {
        code: MCP_REFUSED_CODE,
        message: parts.join(" — "),
        data: { ...body, http_status: refusal.status },
      },
    },
  };
}

/** The `tools/call` result a held call gets at once: not an error, the proposal id in words and in data. */
export function heldResult(id: JsonRpcId, tool: string, gateId: string): Record<string, unknown> {
  const text = `held for human approval: proposal ${gateId} (MCP tool ${tool}). Nothing was sent yet; it runs once if approved, and a later run sees the outcome in ~/self/journal.`;
  return {
    jsonrpc: "2.0",
    id,
    result: {
      // no structuredContent: a tool with an output schema would have it checked against that
      content: [{ type: "text", text }],
      isError: false,
    },
  };
}

/**
 * The JSON-RPC messages in an MCP server's answer: the body itself when it is
 * JSON, each `data:` line when it is an event stream. What doesn't parse as an
 * object is left out.
 */
export function jsonRpcMessages(text: string, eventStream: boolean): Record<string, unknown>[] {
  const raws = eventStream
    ? text
        .split(/\r?\n/)
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).trim())
    : [text];
  const messages: Record<string, unknown>[] = [];
  for (const raw of raws) {
    try {
      const parsed: unknown = JSON.parse(raw);
      if (typeof parsed === "object" && parsed !== null)
        messages.push(parsed as Record<string, unknown>);
    } catch {
      // not a message: skipped
    }
  }
  return messages;
}
