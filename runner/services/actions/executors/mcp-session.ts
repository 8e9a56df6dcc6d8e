import type { IncomingMessage } from "node:http";
import { jsonRpcMessages } from "../../../boundary/gateway/mcp/answers.ts";
import type { Upstreams, UpstreamTarget } from "../../../boundary/gateway/upstream/pools.ts";
import { ROSTER_VERSION } from "../../../ground/version.ts";

/**
 * One MCP tool call made from the host over streamable HTTP, for an approved
 * gate: a fresh session (initialize, initialized, tools/call, then closed),
 * sent through the gateway's own Upstreams so name resolution, the SSRF guard
 * and TLS verification are exactly the gateway's. The answer may be JSON or an
 * event stream; either is read up to MAX_ANSWER_BYTES. Written by hand rather
 * than with the MCP SDK: the runner does not ship the SDK, and the three
 * messages are all a desk ever sends.
 */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;
/** How long one answer may take to arrive whole, headers aside (the gateway bounds those). */
const ANSWER_DEADLINE_MS = 60_000;
const PROTOCOL_VERSION = "2025-06-18";

export interface McpEndpoint {
  target: UpstreamTarget;
  path: string;
  allowInternal: boolean;
  /** The credential's headers, rendered for this server only. */
  inject: Map<string, string>;
}

export interface McpCallOutcome {
  /** The HTTP status of the tools/call answer. */
  status: number;
  /** The JSON-RPC `result` (or `error`) the server sent for the call. */
  result?: unknown;
  error?: unknown;
}

export async function callMcpTool(
  upstreams: Upstreams,
  endpoint: McpEndpoint,
  tool: string,
  args: Record<string, unknown>,
): Promise<McpCallOutcome> {
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
  };
  const post = async (message: Record<string, unknown>) => {
    const reply = await upstreams.send(endpoint.target, endpoint.allowInternal, {
      method: "POST",
      path: endpoint.path,
      headers: { ...headers, ...Object.fromEntries(endpoint.inject) },
      body: Buffer.from(JSON.stringify(message)),
    });
    if (reply.kind !== "response") {
      reply.socket.destroy();
      throw new Error("the MCP server answered with an upgrade");
    }
    return reply.response;
  };

  const init = await post({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: {
      protocolVersion: PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: { name: "roster-approval-desk", version: ROSTER_VERSION },
    },
  });
  const initAnswer = await answerTo(init, 1);
  if (init.statusCode !== 200 || !initAnswer || "error" in initAnswer)
    throw new Error(
      `the MCP server refused initialize (HTTP ${init.statusCode}${initAnswer && "error" in initAnswer ? `: ${JSON.stringify(initAnswer.error)}` : ""})`,
    );
  const session = init.headers["mcp-session-id"];
  if (typeof session === "string") headers["mcp-session-id"] = session;
  const negotiated = (initAnswer.result as { protocolVersion?: unknown } | undefined)
    ?.protocolVersion;
  headers["mcp-protocol-version"] = typeof negotiated === "string" ? negotiated : PROTOCOL_VERSION;

  const initialized = await post({ jsonrpc: "2.0", method: "notifications/initialized" });
  initialized.resume();

  const call = await post({
    jsonrpc: "2.0",
    id: 2,
    method: "tools/call",
    params: { name: tool, arguments: args },
  });
  const status = call.statusCode ?? 502;
  const answer = await answerTo(call, 2);
  if (typeof session === "string") {
    // best effort: a server that keeps sessions can let this one go
    void upstreams
      .send(endpoint.target, endpoint.allowInternal, {
        method: "DELETE",
        path: endpoint.path,
        headers: { ...headers, ...Object.fromEntries(endpoint.inject) },
        body: undefined,
      })
      .then((reply) => (reply.kind === "response" ? reply.response.resume() : undefined))
      .catch(() => undefined);
  }
  if (!answer) return { status };
  return { status, ...("error" in answer ? { error: answer.error } : { result: answer.result }) };
}

type Answer = { result: unknown } | { error: unknown };

/** The JSON-RPC answer to `id` in a JSON body or an event stream, read up to the cap. */
async function answerTo(response: IncomingMessage, id: number): Promise<Answer | undefined> {
  const stream = String(response.headers["content-type"] ?? "").includes("text/event-stream");
  const find = (text: string): Answer | undefined => {
    for (const parsed of jsonRpcMessages(text, stream)) {
      const message = parsed as { id?: unknown; result?: unknown; error?: unknown };
      if (message.id !== id) continue;
      if (message.error !== undefined) return { error: message.error };
      return { result: message.result };
    }
    return undefined;
  };
  // a server may keep its event stream open after the answer, or stall mid-body:
  // the read ends at the answer, and in any case within the deadline
  const deadline = setTimeout(
    () =>
      response.destroy(
        new Error(`the MCP server did not finish its answer in ${ANSWER_DEADLINE_MS / 1000} s`),
      ),
    ANSWER_DEADLINE_MS,
  );
  try {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response) {
      const buffer = chunk as Buffer;
      size += buffer.length;
      if (size > MAX_ANSWER_BYTES) {
        response.destroy();
        throw new Error(`the MCP server's answer is over ${MAX_ANSWER_BYTES} bytes`);
      }
      chunks.push(buffer);
      if (!stream) continue;
      const answer = find(Buffer.concat(chunks).toString("utf8"));
      if (answer) {
        response.destroy();
        return answer;
      }
    }
    return find(Buffer.concat(chunks).toString("utf8"));
  } finally {
    clearTimeout(deadline);
  }
}
