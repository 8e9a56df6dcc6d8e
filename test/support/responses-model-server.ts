/**
 * TEST DOUBLE for OpenAI's Responses API. Model providers can't be reached from
 * here, so this speaks the real wire protocol in their place: `POST
 * /v1/responses` with `stream: true` answered by the server-sent events the
 * real API sends, in its order (response.created, response.in_progress, each
 * output item added, its content streamed in deltas and done, then
 * response.completed carrying the call's usage). A function call's arguments
 * arrive split across two response.function_call_arguments.delta events, and a
 * freeform ("custom") tool's input across two
 * response.custom_tool_call_input.delta events, as real streams cut them.
 *
 * Like model-server.ts (the Chat Completions double pi talks to) it plays a
 * script of turns in order, a turn may be decided from the request it answers,
 * and it fails on demand (an HTTP status, a slow answer, response.failed, a
 * stream cut before response.completed). It records every request it gets,
 * model calls and anything else a client asks of the base URL: GET /v1/models
 * is answered with the API's model list, and the Responses WebSocket Codex's
 * built-in OpenAI provider tries first (a GET with `Upgrade: websocket`) is
 * refused with 426, so the client falls back to HTTPS at once, as it does
 * when a provider or proxy has no WebSocket.
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import { performance } from "node:perf_hooks";
import * as zlib from "node:zlib";
import { ScriptedServer } from "./scripted-server.ts";

export interface ScriptedToolCall {
  name: string;
  /** A function tool's arguments, sent as JSON text split across two deltas. */
  arguments?: Record<string, unknown>;
  /** A freeform ("custom") tool's raw input, instead of arguments (Codex's exec and apply_patch). */
  input?: string;
  /**
   * A client-run tool search's arguments, instead of arguments: a `tool_search_call`
   * item (the tool's name is then unused). Codex answers it with the deferred tools
   * that match, its MCP tools among them, for the next call to offer.
   */
  search?: Record<string, unknown>;
  /** The namespace a function tool was offered in (Codex puts MCP tools in `mcp__<server>__`). */
  namespace?: string;
  /** The call_id the client answers with (made up unless set). */
  id?: string;
}

export interface Usage {
  /** Input tokens, cached ones included (as the API counts them). */
  input: number;
  /** Of those, the ones read from the prompt cache. */
  cached?: number;
  output: number;
  /** Of the output tokens, the ones spent reasoning. */
  reasoning?: number;
}

export interface Turn {
  /** Assistant text: a message item after any tool calls' items. */
  text?: string;
  /** Tool calls in this turn (several at once is allowed). */
  toolCalls?: ScriptedToolCall[];
  /** Answer with this HTTP status and the API's error body instead of a stream. */
  status?: number;
  /** Wait this long before answering (a slow provider). */
  delayMs?: number;
  /** End the stream with response.failed carrying this error (a failure mid-stream). */
  failure?: { code: string; message: string };
  /** Stream the output items but never send response.completed (a cut stream). */
  omitCompleted?: boolean;
  /** The usage response.completed reports (10 input, 0 cached, 5 output unless set). */
  usage?: Usage;
}

/** A turn can be decided from the request it answers (e.g. echo a tool result). */
export type ScriptStep = Turn | ((request: RecordedRequest) => Turn);

export interface RecordedRequest {
  method: string;
  /** The request target as sent, query included. */
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body ({} when there was none). */
  body: ResponsesRequestBody;
  /** performance.now() when the request's headers arrived, before its body was read. */
  arrivedAt: number;
}

/** One item of a request's `input` (messages, earlier calls, their outputs, and Codex's own kinds). */
export interface InputItem {
  type?: string;
  role?: string;
  content?: unknown;
  call_id?: string;
  name?: string;
  arguments?: string;
  input?: string;
  output?: unknown;
  [key: string]: unknown;
}

export interface ResponsesRequestBody {
  model?: string;
  instructions?: string;
  input?: InputItem[];
  tools?: { type: string; name?: string; [key: string]: unknown }[];
  stream?: boolean;
  [key: string]: unknown;
}

/** A tool's output as the client sent it back. */
export interface ToolOutput {
  call_id: string;
  output: string;
}

const ERROR_TYPES: Record<number, { type: string; code: string | null }> = {
  400: { type: "invalid_request_error", code: null },
  401: { type: "invalid_request_error", code: "invalid_api_key" },
  403: { type: "invalid_request_error", code: "unsupported_country_region_territory" },
  404: { type: "invalid_request_error", code: "model_not_found" },
  429: { type: "requests", code: "rate_limit_exceeded" },
  500: { type: "server_error", code: null },
  503: { type: "server_error", code: null },
};

export class ResponsesModelServer extends ScriptedServer<ScriptStep> {
  /** Every request, in arrival order, whatever its path. */
  readonly requests: RecordedRequest[] = [];
  /** Told of each model call as it is recorded, before it is answered. */
  onRequest: ((request: RecordedRequest) => void) | undefined;
  /** The ids GET /v1/models lists. */
  models = ["scripted"];
  private counter = 0;

  /** The model calls only: POST …/responses, in order. */
  get modelCalls(): RecordedRequest[] {
    return this.requests.filter((r) => r.method === "POST" && isResponsesPath(r.path));
  }

  /** Base URL for a client on `host` (clients append /responses, /models). */
  baseUrl(host = "127.0.0.1"): string {
    return `http://${host}:${this.port}/v1`;
  }

  /** The tool outputs the latest model call sent back (function and custom tools alike). */
  toolOutputs(): ToolOutput[] {
    const last = this.modelCalls.at(-1);
    return (last?.body.input ?? [])
      .filter(
        (item) => item.type === "function_call_output" || item.type === "custom_tool_call_output",
      )
      .map((item) => ({ call_id: String(item.call_id ?? ""), output: outputText(item.output) }));
  }

  protected failure(message: string): unknown {
    return apiError(500, message);
  }

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const arrivedAt = performance.now();
    const raw = await readBody(req);
    const method = req.method ?? "GET";
    const path = req.url ?? "/";
    const recorded: RecordedRequest = {
      method,
      path,
      headers: { ...req.headers },
      body: raw.length ? (JSON.parse(raw) as ResponsesRequestBody) : {},
      arrivedAt,
    };
    this.requests.push(recorded);
    const route = path.split("?")[0] ?? path;
    if (String(req.headers.upgrade ?? "").toLowerCase() === "websocket") {
      // No WebSocket here, as behind a proxy that has none: the client falls back to HTTPS.
      sendJson(res, 426, apiError(426, "websocket transport is not offered; use HTTPS"));
      return;
    }
    if (method === "GET" && route.endsWith("/models")) {
      sendJson(res, 200, {
        object: "list",
        data: this.models.map((id) => ({ id, object: "model", created: 0, owned_by: "system" })),
      });
      return;
    }
    if (method !== "POST" || !isResponsesPath(route)) {
      sendJson(res, 404, apiError(404, `no route ${method} ${path}`));
      return;
    }
    this.onRequest?.(recorded);
    const step = this.nextStep({ text: "[responses-model-server: script exhausted]" });
    const turn = typeof step === "function" ? step(recorded) : step;
    if (turn.delayMs) await new Promise((resolve) => setTimeout(resolve, turn.delayMs));
    if (turn.status) {
      sendJson(res, turn.status, apiError(turn.status, `scripted failure ${turn.status}`));
      return;
    }
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      connection: "keep-alive",
      "x-request-id": `req_${this.counter + 1}`,
    });
    for (const [name, data] of this.eventsFor(turn, recorded.body)) {
      res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
    }
    res.end();
  }

  /** The events of one streamed response, numbered in order as the API numbers them. */
  private eventsFor(turn: Turn, body: ResponsesRequestBody): Array<[string, object]> {
    const n = ++this.counter;
    const events: Array<[string, object]> = [];
    const emit = (type: string, fields: object) => {
      events.push([type, { type, sequence_number: events.length, ...fields }]);
    };
    const response = (status: string, output: object[], extra: object = {}) => ({
      id: `resp_${n}`,
      object: "response",
      created_at: Math.floor(Date.now() / 1000),
      status,
      error: null,
      incomplete_details: null,
      instructions: body.instructions ?? null,
      model: body.model ?? "scripted",
      output,
      parallel_tool_calls: body.parallel_tool_calls ?? true,
      previous_response_id: body.previous_response_id ?? null,
      store: body.store ?? false,
      tool_choice: body.tool_choice ?? "auto",
      tools: body.tools ?? [],
      usage: null,
      metadata: {},
      ...extra,
    });
    emit("response.created", { response: response("in_progress", []) });
    emit("response.in_progress", { response: response("in_progress", []) });
    const output: object[] = [];
    (turn.toolCalls ?? []).forEach((call, index) => {
      const output_index = output.length;
      const call_id = call.id ?? `call_${n}_${index}`;
      if (call.search !== undefined) {
        const item = {
          id: `tsc_${n}_${index}`,
          type: "tool_search_call",
          call_id,
          execution: "client",
          arguments: call.search,
        };
        emit("response.output_item.added", {
          output_index,
          item: { ...item, status: "in_progress" },
        });
        const done = { ...item, status: "completed" };
        emit("response.output_item.done", { output_index, item: done });
        output.push(done);
        return;
      }
      if (call.input !== undefined) {
        const item_id = `ctc_${n}_${index}`;
        const item = { id: item_id, type: "custom_tool_call", call_id, name: call.name };
        emit("response.output_item.added", {
          output_index,
          item: { ...item, status: "in_progress", input: "" },
        });
        for (const delta of halves(call.input)) {
          emit("response.custom_tool_call_input.delta", { item_id, output_index, delta });
        }
        emit("response.custom_tool_call_input.done", { item_id, output_index, input: call.input });
        const done = { ...item, status: "completed", input: call.input };
        emit("response.output_item.done", { output_index, item: done });
        output.push(done);
        return;
      }
      const item_id = `fc_${n}_${index}`;
      const args = JSON.stringify(call.arguments ?? {});
      const item = {
        id: item_id,
        type: "function_call",
        call_id,
        name: call.name,
        ...(call.namespace ? { namespace: call.namespace } : {}),
      };
      emit("response.output_item.added", {
        output_index,
        item: { ...item, status: "in_progress", arguments: "" },
      });
      for (const delta of halves(args)) {
        emit("response.function_call_arguments.delta", { item_id, output_index, delta });
      }
      emit("response.function_call_arguments.done", {
        item_id,
        output_index,
        name: call.name,
        arguments: args,
      });
      const done = { ...item, status: "completed", arguments: args };
      emit("response.output_item.done", { output_index, item: done });
      output.push(done);
    });
    if (turn.text !== undefined) {
      const output_index = output.length;
      const item_id = `msg_${n}`;
      const part = { type: "output_text", annotations: [], logprobs: [] };
      const message = { id: item_id, type: "message", role: "assistant" };
      emit("response.output_item.added", {
        output_index,
        item: { ...message, status: "in_progress", content: [] },
      });
      const at = { item_id, output_index, content_index: 0 };
      emit("response.content_part.added", { ...at, part: { ...part, text: "" } });
      for (const delta of halves(turn.text)) {
        emit("response.output_text.delta", { ...at, delta, logprobs: [] });
      }
      emit("response.output_text.done", { ...at, text: turn.text, logprobs: [] });
      emit("response.content_part.done", { ...at, part: { ...part, text: turn.text } });
      const done = { ...message, status: "completed", content: [{ ...part, text: turn.text }] };
      emit("response.output_item.done", { output_index, item: done });
      output.push(done);
    }
    if (turn.failure) {
      emit("response.failed", {
        response: response("failed", output, { error: turn.failure }),
      });
      return events;
    }
    if (turn.omitCompleted) return events;
    const usage = turn.usage ?? { input: 10, output: 5 };
    emit("response.completed", {
      response: response("completed", output, {
        usage: {
          input_tokens: usage.input,
          input_tokens_details: { cached_tokens: usage.cached ?? 0 },
          output_tokens: usage.output,
          output_tokens_details: { reasoning_tokens: usage.reasoning ?? 0 },
          total_tokens: usage.input + usage.output,
        },
      }),
    });
    return events;
  }
}

function isResponsesPath(path: string): boolean {
  return (path.split("?")[0] ?? path).endsWith("/responses");
}

/** A text cut in two, as a provider streams it in more than one delta (one piece if too short). */
function halves(text: string): string[] {
  const cut = Math.ceil(text.length / 2);
  return text.length > 1 ? [text.slice(0, cut), text.slice(cut)] : [text];
}

/** The API's error body for a status. */
function apiError(status: number, message: string): object {
  const kind = ERROR_TYPES[status] ?? { type: "invalid_request_error", code: null };
  return { error: { message, type: kind.type, param: null, code: kind.code } };
}

function sendJson(res: ServerResponse, status: number, body: object): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

/** A tool output's text: a string, or the text of its content parts. */
export function outputText(output: unknown): string {
  if (typeof output === "string") return output;
  if (Array.isArray(output)) {
    return output
      .map((part) => (typeof part === "object" && part && "text" in part ? String(part.text) : ""))
      .join("");
  }
  if (typeof output === "object" && output && "content" in output) {
    return outputText(output.content);
  }
  return output === undefined ? "" : JSON.stringify(output);
}

/** The body as text, undoing a content-encoding a client compressed it with. */
async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks);
  const encoding = String(req.headers["content-encoding"] ?? "identity").toLowerCase();
  if (encoding === "identity") return raw.toString("utf8");
  if (encoding === "gzip") return zlib.gunzipSync(raw).toString("utf8");
  if (encoding === "deflate") return zlib.inflateSync(raw).toString("utf8");
  if (encoding === "br") return zlib.brotliDecompressSync(raw).toString("utf8");
  const zstd = (zlib as { zstdDecompressSync?: (data: Buffer) => Buffer }).zstdDecompressSync;
  if (encoding === "zstd" && zstd) return zstd(raw).toString("utf8");
  throw new Error(`request body in content-encoding ${encoding}, which this Node can't read`);
}
