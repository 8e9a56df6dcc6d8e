import { afterEach, describe, expect, it } from "vitest";
import { ModelServer } from "../support/model-server.ts";

/** Reads an SSE body into its `data:` payloads (what pi's OpenAI client does). */
async function sse(response: Response): Promise<unknown[]> {
  const text = await response.text();
  return text
    .split("\n\n")
    .map((block) => block.replace(/^data: /, "").trim())
    .filter((data) => data && data !== "[DONE]")
    .map((data) => JSON.parse(data) as unknown);
}

const chat = (server: ModelServer, body: object = {}) =>
  fetch(`${server.baseUrl()}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer k-123" },
    body: JSON.stringify({ model: "m", stream: true, messages: [], ...body }),
  });

let server: ModelServer | undefined;
afterEach(async () => {
  await server?.stop();
});

describe("the scripted model server", () => {
  it("streams text with a stop finish_reason and records the request", async () => {
    server = await new ModelServer([{ text: "hello there" }]).start();
    const chunks = (await sse(
      await chat(server, { messages: [{ role: "user", content: "hi" }] }),
    )) as Array<{
      choices: Array<{ delta: { content?: string }; finish_reason: string | null }>;
    }>;
    const text = chunks
      .flatMap((c) => c.choices.map((choice) => choice.delta.content ?? ""))
      .join("");
    expect(text).toBe("hello there");
    expect(chunks.flatMap((c) => c.choices.map((choice) => choice.finish_reason))).toContain(
      "stop",
    );
    expect(server.requests[0]?.headers.authorization).toBe("Bearer k-123");
    expect(server.requests[0]?.body.messages).toEqual([{ role: "user", content: "hi" }]);
  });

  it("streams several tool calls with split arguments and a tool_calls finish", async () => {
    server = await new ModelServer([
      {
        toolCalls: [
          { name: "a", arguments: { x: 1 } },
          { name: "b", arguments: { y: "two" } },
        ],
      },
    ]).start();
    const chunks = (await sse(await chat(server))) as Array<{
      choices: Array<{
        delta: {
          tool_calls?: Array<{ index: number; function: { name?: string; arguments: string } }>;
        };
        finish_reason: string | null;
      }>;
    }>;
    const calls = new Map<number, { name: string; args: string }>();
    for (const chunk of chunks) {
      for (const call of chunk.choices[0]?.delta.tool_calls ?? []) {
        const entry = calls.get(call.index) ?? { name: "", args: "" };
        entry.name += call.function.name ?? "";
        entry.args += call.function.arguments;
        calls.set(call.index, entry);
      }
    }
    expect([...calls.values()].map((c) => [c.name, JSON.parse(c.args)])).toEqual([
      ["a", { x: 1 }],
      ["b", { y: "two" }],
    ]);
    expect(chunks.some((c) => c.choices[0]?.finish_reason === "tool_calls")).toBe(true);
  });

  it("fails on demand: an HTTP status, a slow answer, a missing finish_reason", async () => {
    server = await new ModelServer([
      { status: 429 },
      { text: "late", delayMs: 300 },
      { text: "cut", omitFinishReason: true },
    ]).start();
    expect((await chat(server)).status).toBe(429);
    const started = Date.now();
    await (await chat(server)).text();
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    const chunks = (await sse(await chat(server))) as Array<{
      choices: Array<{ finish_reason: string | null }>;
    }>;
    expect(
      chunks.flatMap((c) => c.choices.map((choice) => choice.finish_reason)).filter(Boolean),
    ).toEqual([]);
  });

  it("decides a turn from the request it answers", async () => {
    server = await new ModelServer([
      (request) => ({ text: `you sent ${request.body.messages?.length ?? 0} messages` }),
    ]).start();
    const chunks = (await sse(
      await chat(server, {
        messages: [
          { role: "user", content: "a" },
          { role: "user", content: "b" },
        ],
      }),
    )) as Array<{ choices: Array<{ delta: { content?: string } }> }>;
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe(
      "you sent 2 messages",
    );
  });
});
