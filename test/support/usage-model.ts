/**
 * Test double for model providers nobody can reach from here: answers in the
 * real wire formats that carry token usage — Anthropic Messages (a JSON
 * message, or its event stream: message_start with the input counts,
 * message_delta with the cumulative output), OpenAI Chat Completions (JSON,
 * or a stream whose last chunk carries `usage`) and OpenAI Responses (a
 * stream ending in response.completed). The gateway's usage meter is tested
 * against these bytes.
 */
import type { ServerResponse } from "node:http";

export interface Tokens {
  model: string;
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
}

const sse = (events: Array<[string | undefined, unknown]>) =>
  events
    .map(([name, data]) => `${name ? `event: ${name}\n` : ""}data: ${JSON.stringify(data)}\n\n`)
    .join("");

export function anthropicJson(t: Tokens): string {
  return JSON.stringify({
    id: "msg_1",
    type: "message",
    role: "assistant",
    model: t.model,
    content: [{ type: "text", text: "hello" }],
    stop_reason: "end_turn",
    usage: {
      input_tokens: t.input,
      output_tokens: t.output,
      cache_read_input_tokens: t.cacheRead ?? 0,
      cache_creation_input_tokens: t.cacheWrite ?? 0,
    },
  });
}

export function anthropicStream(t: Tokens): string {
  return sse([
    [
      "message_start",
      {
        type: "message_start",
        message: {
          id: "msg_1",
          type: "message",
          role: "assistant",
          model: t.model,
          content: [],
          usage: {
            input_tokens: t.input,
            output_tokens: 1,
            cache_read_input_tokens: t.cacheRead ?? 0,
            cache_creation_input_tokens: t.cacheWrite ?? 0,
          },
        },
      },
    ],
    [
      "content_block_start",
      { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
    ],
    [
      "content_block_delta",
      { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "hel" } },
    ],
    [
      "content_block_delta",
      { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "lo" } },
    ],
    ["content_block_stop", { type: "content_block_stop", index: 0 }],
    [
      "message_delta",
      {
        type: "message_delta",
        delta: { stop_reason: "end_turn" },
        usage: { output_tokens: t.output },
      },
    ],
    ["message_stop", { type: "message_stop" }],
  ]);
}

const chatUsage = (t: Tokens) => ({
  prompt_tokens: t.input + (t.cacheRead ?? 0),
  completion_tokens: t.output,
  total_tokens: t.input + (t.cacheRead ?? 0) + t.output,
  prompt_tokens_details: { cached_tokens: t.cacheRead ?? 0 },
});

export function chatJson(t: Tokens): string {
  return JSON.stringify({
    id: "chatcmpl-1",
    object: "chat.completion",
    model: t.model,
    choices: [
      { index: 0, message: { role: "assistant", content: "hello" }, finish_reason: "stop" },
    ],
    usage: chatUsage(t),
  });
}

export function chatStream(t: Tokens): string {
  const chunk = (delta: unknown, finish: string | null) => ({
    id: "chatcmpl-1",
    object: "chat.completion.chunk",
    model: t.model,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  return `${sse([
    [undefined, chunk({ role: "assistant", content: "hel" }, null)],
    [undefined, chunk({ content: "lo" }, "stop")],
    [
      undefined,
      {
        id: "chatcmpl-1",
        object: "chat.completion.chunk",
        model: t.model,
        choices: [],
        usage: chatUsage(t),
      },
    ],
  ])}data: [DONE]\n\n`;
}

export function responsesStream(t: Tokens): string {
  const usage = {
    input_tokens: t.input + (t.cacheRead ?? 0),
    input_tokens_details: { cached_tokens: t.cacheRead ?? 0 },
    output_tokens: t.output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: t.input + (t.cacheRead ?? 0) + t.output,
  };
  return sse([
    [
      "response.created",
      { type: "response.created", response: { id: "resp_1", model: t.model, usage: null } },
    ],
    ["response.output_text.delta", { type: "response.output_text.delta", delta: "hello" }],
    [
      "response.completed",
      { type: "response.completed", response: { id: "resp_1", model: t.model, usage } },
    ],
  ]);
}

/** Writes a body as a provider would: JSON at once, a stream event by event. */
export async function answer(res: ServerResponse, body: string, stream: boolean): Promise<void> {
  if (!stream) {
    res.writeHead(200, { "content-type": "application/json" }).end(body);
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  for (const event of body.split(/(?<=\n\n)/)) {
    res.write(event);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  res.end();
}
