/**
 * TEST DOUBLE for Anthropic's Messages API. Model providers can't be reached
 * from here, so this speaks the real wire protocol in their place, the one
 * Claude Code's CLI sends and parses: `POST /v1/messages` (the CLI adds
 * `?beta=true`) answered with an SSE stream of `message_start` (input usage),
 * `ping`, `content_block_start` / `content_block_delta` / `content_block_stop`
 * for text and `tool_use` blocks (a tool's input as `input_json_delta`s split
 * across chunks, as the API streams it), `message_delta` (stop_reason and
 * output usage) and `message_stop`; or one JSON message when the request
 * says `stream: false` (the CLI falls back to that after a failed stream).
 *
 * It plays a script of turns in order (the same design as model-server.ts),
 * records every request, and fails on demand. The other calls the CLI makes
 * on the base URL during a run (`HEAD /api/hello` before the first turn;
 * `count_tokens` and the model list, should it ask) get a plausible answer
 * without using up a turn, and are recorded in `otherRequests`.
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import { performance } from "node:perf_hooks";
import { ScriptedServer } from "./scripted-server.ts";

export interface ScriptedToolUse {
  name: string;
  /** Streamed as JSON text in two `input_json_delta` pieces, the way the API splits it. */
  input: Record<string, unknown>;
  id?: string;
}

export interface AnthropicTurn {
  /** Assistant text (the final answer, or text before tool calls). */
  text?: string;
  /** One or more tool_use blocks in this turn (several at once is allowed). */
  toolUses?: ScriptedToolUse[];
  /** Answer with this HTTP status and an Anthropic error body instead of a message. */
  status?: number;
  /**
   * With `status`: the `x-should-retry` header the real API sends. The CLI's
   * client retries 408/409/429/5xx several times with backoff unless it says false.
   */
  shouldRetry?: boolean;
  /** Wait this long before answering (a slow provider). */
  delayMs?: number;
  /** End the stream after the content blocks: no message_delta, no message_stop (a broken provider). */
  cutShort?: boolean;
  /** stop_reason to report (tool_use when there are tool calls, end_turn otherwise, unless set). */
  stopReason?: string;
  /** The usage reported (10 input and 5 output tokens, no cache, unless set). */
  usage?: { input: number; output: number; cacheRead?: number; cacheCreation?: number };
}

/** A turn can be decided from the request it answers (e.g. echo a tool result). */
export type AnthropicScriptStep = AnthropicTurn | ((request: AnthropicRequest) => AnthropicTurn);

export interface ContentBlock {
  type: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: unknown;
  is_error?: boolean;
  [key: string]: unknown;
}

export interface AnthropicMessage {
  role: string;
  content: string | ContentBlock[];
}

export interface MessagesRequestBody {
  model?: string;
  max_tokens?: number;
  stream?: boolean;
  system?: string | ContentBlock[];
  messages?: AnthropicMessage[];
  tools?: { name: string; type?: string; description?: string; input_schema?: unknown }[];
  [key: string]: unknown;
}

export interface AnthropicRequest {
  method: string;
  /** The path with its query (the CLI sends `/v1/messages?beta=true`). */
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: MessagesRequestBody;
  /** performance.now() when the request's headers arrived, before its body was read. */
  arrivedAt: number;
}

/** The API's error `type` for a status (what its SDK and the CLI switch on). */
const ERROR_TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  529: "overloaded_error",
};

export class AnthropicModelServer extends ScriptedServer<AnthropicScriptStep> {
  /** Every `POST /v1/messages` (each one played a turn), in order. */
  readonly requests: AnthropicRequest[] = [];
  /** Every other request on the base URL (hello, count_tokens, models, unknown paths). */
  readonly otherRequests: AnthropicRequest[] = [];
  /** Told of each messages request as it is recorded, before it is answered. */
  onRequest: ((request: AnthropicRequest) => void) | undefined;
  private callCounter = 0;

  /** ANTHROPIC_BASE_URL for a client on `host`: no `/v1`, the client appends `/v1/messages`. */
  baseUrl(host = "127.0.0.1"): string {
    return `http://${host}:${this.port}`;
  }

  /** Every tool_result the client sent back in the latest request, in order. */
  toolResults(): { tool_use_id?: string; content: string; is_error: boolean }[] {
    const last = this.requests.at(-1);
    return (last?.body.messages ?? [])
      .filter((message) => message.role === "user" && Array.isArray(message.content))
      .flatMap((message) => message.content as ContentBlock[])
      .filter((block) => block.type === "tool_result")
      .map((block) => ({
        ...(block.tool_use_id ? { tool_use_id: block.tool_use_id } : {}),
        content: textOf(block.content),
        is_error: block.is_error === true,
      }));
  }

  protected failure(message: string): unknown {
    return errorBody(500, message);
  }

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const arrivedAt = performance.now();
    const raw = await readBody(req);
    const url = req.url ?? "/";
    const path = url.split("?")[0] ?? url;
    const recorded: AnthropicRequest = {
      method: req.method ?? "GET",
      path: url,
      headers: { ...req.headers },
      body: parseBody(raw),
      arrivedAt,
    };
    if (req.method === "POST" && path === "/v1/messages") {
      this.requests.push(recorded);
      this.onRequest?.(recorded);
      await this.answerMessages(recorded, res);
      return;
    }
    this.otherRequests.push(recorded);
    answerOther(recorded, path, res);
  }

  private async answerMessages(request: AnthropicRequest, res: ServerResponse): Promise<void> {
    const step = this.nextStep({ text: "[anthropic-model-server: script exhausted]" });
    const turn = typeof step === "function" ? step(request) : step;
    if (turn.delayMs) await new Promise((resolve) => setTimeout(resolve, turn.delayMs));
    const id = `msg_double_${++this.callCounter}`;
    if (turn.status) {
      res.writeHead(turn.status, {
        "content-type": "application/json",
        "request-id": `req_double_${this.callCounter}`,
        ...(turn.shouldRetry === undefined ? {} : { "x-should-retry": String(turn.shouldRetry) }),
      });
      res.end(JSON.stringify(errorBody(turn.status, `scripted failure ${turn.status}`)));
      return;
    }
    const model = request.body.model ?? "scripted";
    const blocks = this.blocksFor(turn);
    const usage = usageOf(turn);
    const stopReason = turn.stopReason ?? (turn.toolUses?.length ? "tool_use" : "end_turn");
    const headers = { "request-id": `req_double_${this.callCounter}` };
    if (request.body.stream !== true) {
      res.writeHead(200, { ...headers, "content-type": "application/json" });
      res.end(
        JSON.stringify({
          id,
          type: "message",
          role: "assistant",
          model,
          content: blocks,
          stop_reason: stopReason,
          stop_sequence: null,
          usage: { ...usage, output_tokens: turn.usage?.output ?? 5 },
        }),
      );
      return;
    }
    res.writeHead(200, {
      ...headers,
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
    });
    const send = (event: string, data: object) =>
      res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
    send("message_start", {
      message: {
        id,
        type: "message",
        role: "assistant",
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...usage, output_tokens: 1 },
      },
    });
    send("ping", {});
    blocks.forEach((block, index) => {
      for (const event of blockEvents(block, index)) send(event.type, event);
    });
    if (turn.cutShort) {
      res.end();
      return;
    }
    send("message_delta", {
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: turn.usage?.output ?? 5 },
    });
    send("message_stop", {});
    res.end();
  }

  private blocksFor(turn: AnthropicTurn): ContentBlock[] {
    const blocks: ContentBlock[] = [];
    if (turn.text) blocks.push({ type: "text", text: turn.text });
    (turn.toolUses ?? []).forEach((call, index) => {
      blocks.push({
        type: "tool_use",
        id: call.id ?? `toolu_double_${this.callCounter}_${index}`,
        name: call.name,
        input: call.input,
      });
    });
    return blocks;
  }
}

/** One server-sent event's data; its `type` is also the event's name. */
type StreamEvent = { type: string } & Record<string, unknown>;

/** One block as the stream carries it: a start with it empty, its content in two deltas, a stop. */
function blockEvents(block: ContentBlock, index: number): StreamEvent[] {
  const halves = (text: string) => {
    const cut = Math.ceil(text.length / 2);
    return [text.slice(0, cut), text.slice(cut)].filter((piece) => piece.length > 0);
  };
  if (block.type === "text") {
    return [
      { type: "content_block_start", index, content_block: { type: "text", text: "" } },
      ...halves(block.text ?? "").map((text) => ({
        type: "content_block_delta",
        index,
        delta: { type: "text_delta", text },
      })),
      { type: "content_block_stop", index },
    ];
  }
  return [
    {
      type: "content_block_start",
      index,
      content_block: { type: "tool_use", id: block.id, name: block.name, input: {} },
    },
    // the API opens a tool's input with an empty piece, then sends it in parts
    ...["", ...halves(JSON.stringify(block.input ?? {}))].map((partial_json) => ({
      type: "content_block_delta",
      index,
      delta: { type: "input_json_delta", partial_json },
    })),
    { type: "content_block_stop", index },
  ];
}

function usageOf(turn: AnthropicTurn) {
  return {
    input_tokens: turn.usage?.input ?? 10,
    cache_creation_input_tokens: turn.usage?.cacheCreation ?? 0,
    cache_read_input_tokens: turn.usage?.cacheRead ?? 0,
  };
}

/** The side calls: sane answers so a client that makes them carries on. */
function answerOther(request: AnthropicRequest, path: string, res: ServerResponse): void {
  const [status, body] = otherAnswer(request, path);
  res.writeHead(status, { "content-type": "application/json" });
  res.end(request.method === "HEAD" ? undefined : JSON.stringify(body));
}

function otherAnswer(request: AnthropicRequest, path: string): [number, object] {
  // the CLI's reachability check (it skips it behind a proxy or with non-essential traffic off)
  if (path === "/api/hello") return [200, {}];
  if (request.method === "POST" && path === "/v1/messages/count_tokens") {
    // roughly four characters a token, near enough to what the API counts
    const tokens = Math.ceil(JSON.stringify(request.body).length / 4);
    return [200, { input_tokens: Math.max(1, tokens) }];
  }
  if (request.method === "GET" && path === "/v1/models") {
    const data = [modelInfo("scripted")];
    return [200, { data, has_more: false, first_id: "scripted", last_id: "scripted" }];
  }
  const model = /^\/v1\/models\/([^/]+)$/.exec(path)?.[1];
  if (request.method === "GET" && model) return [200, modelInfo(decodeURIComponent(model))];
  return [404, errorBody(404, `no route ${request.method} ${request.path}`)];
}

function modelInfo(id: string) {
  return { type: "model", id, display_name: id, created_at: "2025-01-01T00:00:00Z" };
}

function errorBody(status: number, message: string) {
  return { type: "error", error: { type: ERROR_TYPES[status] ?? "api_error", message } };
}

/** The text of a message's content, a tool_result's content or a system prompt. */
export function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (typeof part === "object" && part && "text" in part ? String(part.text) : ""))
      .join("");
  }
  return "";
}

function parseBody(raw: string): MessagesRequestBody {
  if (!raw) return {};
  try {
    return JSON.parse(raw) as MessagesRequestBody;
  } catch {
    return { unparsed: raw };
  }
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
