/**
 * TEST DOUBLE for a model provider — the only one in this suite. Model providers
 * can't be reached from here, so this speaks the real wire protocol in their
 * place: an OpenAI-compatible `POST /v1/chat/completions` that streams SSE
 * `chat.completion.chunk`s (the format pi 1.6.0 sends and parses; see the
 * engine notes), the last of which reports the call's token usage. It plays
 * a script of turns in order, records every request (headers and parsed
 * body) for assertions, and fails on demand.
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import { performance } from "node:perf_hooks";
import type { PrefixCache } from "./prefix-cache.ts";
import { ScriptedServer } from "./scripted-server.ts";

export interface ScriptedToolCall {
  name: string;
  /** Sent as JSON text, split across two chunks the way real providers stream it. */
  arguments: Record<string, unknown>;
  id?: string;
}

export interface Turn {
  /** Assistant text (the final answer, or text alongside tool calls). */
  text?: string;
  /** One or more tool calls in this turn (several at once is allowed). */
  toolCalls?: ScriptedToolCall[];
  /** Answer with this HTTP status and an error body instead of a stream. */
  status?: number;
  /** Wait this long before answering (a slow provider). */
  delayMs?: number;
  /** Stream the content but never send a finish_reason (a broken provider). */
  omitFinishReason?: boolean;
  /** The usage the stream's last chunk reports (10 prompt and 5 completion tokens unless set). */
  usage?: { prompt: number; completion: number };
}

/** A turn can be decided from the request it answers (e.g. echo a tool result). */
export type ScriptStep = Turn | ((request: RecordedRequest) => Turn);

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: ChatRequestBody;
  /** performance.now() when the request's headers arrived, before its body was read. */
  arrivedAt: number;
}

export interface ChatMessage {
  role: string;
  content?: unknown;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

export interface ChatRequestBody {
  model?: string;
  messages?: ChatMessage[];
  stream?: boolean;
  tools?: { type: string; function: { name: string; description?: string } }[];
  [key: string]: unknown;
}

export class ModelServer extends ScriptedServer<ScriptStep> {
  readonly requests: RecordedRequest[] = [];
  /** When set, usage reports the prompt's size and its cached prefix as a provider's cache would. */
  cache: PrefixCache | undefined;
  /** Told of each chat request as it is recorded, before it is answered (a bench waits on it). */
  onRequest: ((request: RecordedRequest) => void) | undefined;
  private callCounter = 0;

  /** Base URL for a client on `host` (pi appends /chat/completions). */
  baseUrl(host = "127.0.0.1"): string {
    return `http://${host}:${this.port}/v1`;
  }

  /** Every tool result the client sent back, in order (from the latest request). */
  toolResults(): { tool_call_id?: string; content: string }[] {
    const last = this.requests.at(-1);
    return (last?.body.messages ?? [])
      .filter((message) => message.role === "tool")
      .map((message) => ({
        ...(message.tool_call_id ? { tool_call_id: message.tool_call_id } : {}),
        content: textOf(message.content),
      }));
  }

  protected failure(message: string): unknown {
    return { error: { message } };
  }

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const arrivedAt = performance.now();
    const raw = await readBody(req);
    if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
      return;
    }
    const body = JSON.parse(raw || "{}") as ChatRequestBody;
    const recorded: RecordedRequest = {
      method: req.method,
      path: req.url,
      headers: { ...req.headers },
      body,
      arrivedAt,
    };
    this.requests.push(recorded);
    this.onRequest?.(recorded);
    const step = this.nextStep({ text: "[model-server: script exhausted]" });
    const turn = typeof step === "function" ? step(recorded) : step;
    if (turn.delayMs) await new Promise((resolve) => setTimeout(resolve, turn.delayMs));
    if (turn.status) {
      res.writeHead(turn.status, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: `scripted failure ${turn.status}` } }));
      return;
    }
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
    });
    for (const chunk of this.chunksFor(turn, body.model ?? "scripted", body)) {
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
    }
    res.end("data: [DONE]\n\n");
  }

  private chunksFor(turn: Turn, model: string, body: ChatRequestBody): object[] {
    const id = `chatcmpl-${++this.callCounter}`;
    const base = { id, object: "chat.completion.chunk", created: 0, model };
    const chunk = (delta: object, finish: string | null) => ({
      ...base,
      choices: [{ index: 0, delta, finish_reason: finish }],
    });
    const chunks: object[] = [chunk({ role: "assistant" }, null)];
    if (turn.text) {
      const middle = Math.ceil(turn.text.length / 2);
      chunks.push(chunk({ content: turn.text.slice(0, middle) }, null));
      if (turn.text.length > middle) chunks.push(chunk({ content: turn.text.slice(middle) }, null));
    }
    (turn.toolCalls ?? []).forEach((call, index) => {
      const args = JSON.stringify(call.arguments);
      const cut = Math.floor(args.length / 2);
      const callId = call.id ?? `call_${this.callCounter}_${index}`;
      chunks.push(
        chunk(
          {
            tool_calls: [
              {
                index,
                id: callId,
                type: "function",
                function: { name: call.name, arguments: args.slice(0, cut) },
              },
            ],
          },
          null,
        ),
      );
      chunks.push(
        chunk({ tool_calls: [{ index, function: { arguments: args.slice(cut) } }] }, null),
      );
    });
    if (!turn.omitFinishReason) {
      chunks.push(chunk({}, turn.toolCalls?.length ? "tool_calls" : "stop"));
    }
    const cached = this.cache?.read(body);
    const prompt = cached?.promptTokens ?? turn.usage?.prompt ?? 10;
    const completion = turn.usage?.completion ?? 5;
    chunks.push({
      ...base,
      choices: [],
      usage: {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
        ...(cached ? { prompt_tokens_details: { cached_tokens: cached.cachedTokens } } : {}),
      },
    });
    return chunks;
  }
}

export function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (typeof part === "object" && part && "text" in part ? String(part.text) : ""))
      .join("");
  }
  return "";
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
