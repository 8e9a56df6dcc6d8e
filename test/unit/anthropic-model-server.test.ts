import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterEach, describe, expect, it } from "vitest";
import {
  AnthropicModelServer,
  type ContentBlock,
  textOf,
} from "../support/anthropic-model-server.ts";

interface SseEvent {
  event: string;
  data: Record<string, unknown> & { type: string };
}

/** Reads an SSE body into its events (what Anthropic's client does). */
async function sse(response: Response): Promise<SseEvent[]> {
  const text = await response.text();
  return text
    .split("\n\n")
    .filter((block) => block.trim())
    .map((block) => {
      const event = /^event: (.*)$/m.exec(block)?.[1] ?? "";
      const data = /^data: (.*)$/m.exec(block)?.[1] ?? "{}";
      return { event, data: JSON.parse(data) as SseEvent["data"] };
    });
}

const messages = (server: AnthropicModelServer, body: object = {}) =>
  fetch(`${server.baseUrl()}/v1/messages?beta=true`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-api-key": "sk-ant-stand-in",
      "anthropic-version": "2023-06-01",
    },
    body: JSON.stringify({
      model: "claude-test",
      max_tokens: 100,
      stream: true,
      messages: [],
      ...body,
    }),
  });

/** The content blocks a stream builds, put together as a client does. */
function assemble(events: SseEvent[]): ContentBlock[] {
  const blocks: ContentBlock[] = [];
  const json: string[] = [];
  for (const { data } of events) {
    const index = data.index as number;
    if (data.type === "content_block_start") {
      blocks[index] = { ...(data.content_block as ContentBlock) };
      json[index] = "";
    }
    const delta = data.delta as { type: string; text?: string; partial_json?: string } | undefined;
    const block = blocks[index];
    if (data.type === "content_block_delta" && delta && block) {
      if (delta.type === "text_delta") block.text = (block.text ?? "") + (delta.text ?? "");
      if (delta.type === "input_json_delta") json[index] += delta.partial_json ?? "";
    }
    if (data.type === "content_block_stop" && block?.type === "tool_use") {
      block.input = JSON.parse(json[index] ?? "{}");
    }
  }
  return blocks;
}

let server: AnthropicModelServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

describe("the scripted Anthropic model server", () => {
  it("streams text between message_start and message_stop, with usage, and records the request", async () => {
    server = await new AnthropicModelServer([
      { text: "hello there", usage: { input: 120, output: 7, cacheRead: 30 } },
    ]).start();
    const events = await sse(
      await messages(server, { messages: [{ role: "user", content: "hi" }] }),
    );
    expect(events.map((e) => e.event)).toEqual([
      "message_start",
      "ping",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    expect(events.every((e) => e.event === e.data.type)).toBe(true);
    expect(assemble(events)).toEqual([{ type: "text", text: "hello there" }]);
    const start = events[0]?.data.message as { usage: Record<string, number>; model: string };
    expect(start.model).toBe("claude-test");
    expect(start.usage).toMatchObject({ input_tokens: 120, cache_read_input_tokens: 30 });
    expect(events.at(-2)?.data).toMatchObject({
      delta: { stop_reason: "end_turn" },
      usage: { output_tokens: 7 },
    });
    const recorded = server.requests[0];
    expect(recorded?.method).toBe("POST");
    expect(recorded?.path).toBe("/v1/messages?beta=true");
    expect(recorded?.headers["x-api-key"]).toBe("sk-ant-stand-in");
    expect(recorded?.body.messages).toEqual([{ role: "user", content: "hi" }]);
  });

  it("streams several tool_use blocks, each input split across input_json_deltas", async () => {
    server = await new AnthropicModelServer([
      {
        text: "running two",
        toolUses: [
          { name: "Bash", input: { command: "echo one && echo two" } },
          { name: "Read", input: { file_path: "/etc/hostname" }, id: "toolu_mine" },
        ],
      },
    ]).start();
    const events = await sse(await messages(server));
    const pieces = events
      .filter((e) => (e.data.delta as { type?: string } | undefined)?.type === "input_json_delta")
      .filter((e) => e.data.index === 1)
      .map((e) => (e.data.delta as { partial_json: string }).partial_json);
    expect(pieces.filter(Boolean).length).toBe(2);
    expect(() => JSON.parse(pieces[1] ?? "")).toThrow();
    const blocks = assemble(events);
    expect(blocks.map((b) => [b.type, b.name, b.input])).toEqual([
      ["text", undefined, undefined],
      ["tool_use", "Bash", { command: "echo one && echo two" }],
      ["tool_use", "Read", { file_path: "/etc/hostname" }],
    ]);
    expect(blocks[1]?.id).toMatch(/^toolu_/);
    expect(blocks[2]?.id).toBe("toolu_mine");
    expect(events.at(-2)?.data).toMatchObject({ delta: { stop_reason: "tool_use" } });
  });

  it("answers one JSON message when the request does not stream", async () => {
    server = await new AnthropicModelServer([
      { text: "plain", toolUses: [{ name: "Bash", input: { command: "ls" } }] },
    ]).start();
    const response = await messages(server, { stream: false });
    expect(response.headers.get("content-type")).toContain("application/json");
    expect(await response.json()).toMatchObject({
      type: "message",
      role: "assistant",
      content: [
        { type: "text", text: "plain" },
        { type: "tool_use", name: "Bash", input: { command: "ls" } },
      ],
      stop_reason: "tool_use",
      usage: { input_tokens: 10, output_tokens: 5 },
    });
  });

  it("fails on demand: a status with the API's error body, a slow answer, a stream cut short", async () => {
    server = await new AnthropicModelServer([
      { status: 429, shouldRetry: false },
      { text: "late", delayMs: 300 },
      { text: "cut", cutShort: true },
    ]).start();
    const refused = await messages(server);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("x-should-retry")).toBe("false");
    expect(await refused.json()).toMatchObject({
      type: "error",
      error: { type: "rate_limit_error" },
    });
    const started = Date.now();
    await (await messages(server)).text();
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    const events = (await sse(await messages(server))).map((e) => e.event);
    expect(events).toContain("content_block_stop");
    expect(events).not.toContain("message_delta");
    expect(events).not.toContain("message_stop");
  });

  it("decides a turn from the request and reads back the tool results sent", async () => {
    server = await new AnthropicModelServer([
      (request) => ({ text: `you sent ${request.body.messages?.length ?? 0} messages` }),
    ]).start();
    const body = {
      messages: [
        { role: "user", content: "run it" },
        {
          role: "assistant",
          content: [{ type: "tool_use", id: "toolu_1", name: "Bash", input: {} }],
        },
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "done\n" }],
        },
      ],
    };
    expect(assemble(await sse(await messages(server, body)))[0]?.text).toBe("you sent 3 messages");
    expect(server.toolResults()).toEqual([
      { tool_use_id: "toolu_1", content: "done\n", is_error: false },
    ]);
  });

  it("answers the client's side calls without playing a turn, and records them", async () => {
    server = await new AnthropicModelServer([{ text: "kept" }]).start();
    const hello = await fetch(`${server.baseUrl()}/api/hello`, { method: "HEAD" });
    expect(hello.status).toBe(200);
    const counted = await fetch(`${server.baseUrl()}/v1/messages/count_tokens?beta=true`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "a".repeat(400) }] }),
    });
    expect(((await counted.json()) as { input_tokens: number }).input_tokens).toBeGreaterThan(90);
    const models = await fetch(`${server.baseUrl()}/v1/models`);
    expect(await models.json()).toMatchObject({ data: [{ type: "model" }] });
    const unknown = await fetch(`${server.baseUrl()}/api/claude_code/settings`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({
      type: "error",
      error: { type: "not_found_error" },
    });
    expect(server.otherRequests.map((r) => `${r.method} ${r.path}`)).toEqual([
      "HEAD /api/hello",
      "POST /v1/messages/count_tokens?beta=true",
      "GET /v1/models",
      "GET /api/claude_code/settings",
    ]);
    expect(server.requests).toEqual([]);
    expect(server.remaining).toBe(1);
  });
});

/**
 * The real Claude Code CLI against the double, when a binary is named (the
 * box's own tests drive it inside a box; this shows the double speaks what the
 * CLI expects, and how roster's launch line behaves).
 */
const CLAUDE_BIN = process.env.ROSTER_TEST_CLAUDE_BIN;
const haveClaude = Boolean(CLAUDE_BIN && existsSync(CLAUDE_BIN));

interface StreamEvent {
  type: string;
  subtype?: string;
  [key: string]: unknown;
}

describe.runIf(haveClaude)("Claude Code against the double", () => {
  let home: string | undefined;
  let running: ChildProcessWithoutNullStreams | undefined;
  afterEach(async () => {
    if (running?.exitCode === null) running.kill();
    running = undefined;
    if (home) await rm(home, { recursive: true, force: true });
    home = undefined;
  });

  /** A fresh $HOME with an empty workspace in it, as a box starts with. */
  async function makeHome(): Promise<{ home: string; workdir: string }> {
    home = await mkdtemp(join(tmpdir(), "roster-claude-"));
    const workdir = join(home, "workspace");
    await mkdir(workdir);
    return { home, workdir };
  }

  /** A clean environment: nothing of the host's (no real key, no proxy) reaches the CLI. */
  async function launch(
    model: AnthropicModelServer,
    args: string[],
    extraEnv: Record<string, string> = {},
  ): Promise<{
    child: ChildProcessWithoutNullStreams;
    events: StreamEvent[];
    /** Its exit code, once its output is all read. */
    closed: Promise<number | null>;
  }> {
    const { home: dir, workdir } = home
      ? { home, workdir: join(home, "workspace") }
      : await makeHome();
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: dir,
      ANTHROPIC_BASE_URL: model.baseUrl(),
      ANTHROPIC_API_KEY: "sk-ant-stand-in",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      DISABLE_AUTOUPDATER: "1",
      DISABLE_TELEMETRY: "1",
      DISABLE_ERROR_REPORTING: "1",
      // a box runs as uid 1000 and needs none; on a root host bypass mode asks for it
      ...(process.getuid?.() === 0 ? { IS_SANDBOX: "1" } : {}),
      ...extraEnv,
    };
    const child = spawn(
      CLAUDE_BIN ?? "claude",
      [
        "--output-format",
        "stream-json",
        "--verbose",
        "--dangerously-skip-permissions",
        "--disallowedTools",
        "WebFetch",
        "WebSearch",
        ...args,
      ],
      { cwd: workdir, env, stdio: ["pipe", "pipe", "pipe"] },
    );
    running = child;
    // a one-shot run with stdin still open waits 3 s for piped input before it starts
    if (!args.includes("--input-format")) child.stdin.end();
    const events: StreamEvent[] = [];
    createInterface({ input: child.stdout }).on("line", (line) => {
      if (line.trim()) events.push(JSON.parse(line) as StreamEvent);
    });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    const closed = new Promise<number | null>((resolve) =>
      child.once("close", (code) => {
        if (code !== 0) console.error(`claude exited ${code}: ${stderr}`);
        resolve(code);
      }),
    );
    return { child, events, closed };
  }

  async function until(check: () => boolean, what: string, ms = 60_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  it("runs one task: a Bash call, then the answer, with the usage summed in the result", async () => {
    server = await new AnthropicModelServer([
      {
        toolUses: [
          { name: "Bash", input: { command: "echo hello-from-bash", description: "Say hello" } },
        ],
        usage: { input: 1200, output: 40 },
      },
      // the CLI may follow a tool's output with a system-reminder block: look for it, not at it
      (request) => ({
        text: JSON.stringify(request.body.messages?.at(-1)).includes("hello-from-bash")
          ? "The command said hello-from-bash."
          : "The command said nothing.",
        usage: { input: 1300, output: 12 },
      }),
    ]).start();
    const { events, closed } = await launch(server, [
      "-p",
      "say hello with bash",
      "--model",
      "claude-sonnet-4-5",
      "--append-system-prompt",
      "You are roster worker w1.",
    ]);
    expect(await closed).toBe(0);
    const init = events.find((e) => e.type === "system" && e.subtype === "init");
    expect(init).toMatchObject({ model: "claude-sonnet-4-5", permissionMode: "bypassPermissions" });
    expect(init?.tools).toContain("Bash");
    expect(init?.tools).not.toContain("WebFetch");
    expect(init?.tools).not.toContain("WebSearch");
    const content = (type: string) =>
      events
        .filter((e) => e.type === type)
        .flatMap((e) => (e.message as { content: ContentBlock[] }).content);
    expect(content("assistant").map((b) => b.type)).toEqual(["tool_use", "text"]);
    expect(content("user")).toMatchObject([
      { type: "tool_result", content: "hello-from-bash", is_error: false },
    ]);
    expect(events.at(-1)).toMatchObject({
      type: "result",
      subtype: "success",
      is_error: false,
      num_turns: 2,
      result: "The command said hello-from-bash.",
      usage: { input_tokens: 2500, output_tokens: 52 },
    });
    expect(events.at(-1)?.total_cost_usd).toBeGreaterThan(0);

    expect(server.requests).toHaveLength(2);
    const first = server.requests[0];
    expect(first?.headers["x-api-key"]).toBe("sk-ant-stand-in");
    expect(first?.body).toMatchObject({ model: "claude-sonnet-4-5", stream: true });
    expect(textOf(first?.body.system)).toContain("You are roster worker w1.");
    expect(server.toolResults()[0]?.content).toContain("hello-from-bash");
  });

  it("calls a tool of an MCP server given on the command line, without asking", async () => {
    server = await new AnthropicModelServer([
      { toolUses: [{ name: "mcp__shouter__shout", input: { text: "quiet words" } }] },
      { text: "shouted" },
    ]).start();
    const { home: dir } = await makeHome();
    const mcp = join(dir, "shouter.mjs");
    await writeFile(mcp, SHOUTER);
    const config = JSON.stringify({
      mcpServers: { shouter: { type: "stdio", command: process.execPath, args: [mcp] } },
    });
    const run = await launch(
      server,
      ["-p", "shout", "--mcp-config", config, "--strict-mcp-config"],
      { ENABLE_TOOL_SEARCH: "false" },
    );
    expect(await run.closed).toBe(0);
    const init = run.events.find((e) => e.subtype === "init");
    expect(init?.mcp_servers).toEqual([
      expect.objectContaining({ name: "shouter", status: "connected" }),
    ]);
    // with tool search off the MCP tool is sent with its schema, not deferred
    expect(server.requests[0]?.body.tools?.map((tool) => tool.name)).toContain(
      "mcp__shouter__shout",
    );
    expect(textOf(server.toolResults()[0]?.content)).toContain("QUIET WORDS");
    expect(run.events.at(-1)).toMatchObject({ type: "result", is_error: false, result: "shouted" });
  });

  it("keeps a warm session across turns read as stream-json from stdin", async () => {
    server = await new AnthropicModelServer([
      { text: "first answer" },
      (request) => ({
        text: JSON.stringify(request.body.messages).includes("first answer")
          ? "second answer, the first in its history"
          : "second answer, no history",
      }),
    ]).start();
    const { child, events, closed } = await launch(server, ["-p", "--input-format", "stream-json"]);
    const say = (text: string) =>
      child.stdin.write(
        `${JSON.stringify({ type: "user", message: { role: "user", content: text }, parent_tool_use_id: null, session_id: "" })}\n`,
      );
    const results = () => events.filter((e) => e.type === "result");
    say("first question");
    await until(() => results().length === 1, "the first result");
    expect(child.exitCode).toBeNull();
    say("second question");
    await until(() => results().length === 2, "the second result");
    expect(results().map((e) => e.result)).toEqual([
      "first answer",
      "second answer, the first in its history",
    ]);
    // per turn: its own usage and turn count; the cost is the session's so far
    expect(results()[1]).toMatchObject({
      num_turns: 1,
      usage: { input_tokens: 10, output_tokens: 5 },
    });
    expect(results()[1]?.total_cost_usd).toBeGreaterThan(results()[0]?.total_cost_usd as number);
    child.stdin.end();
    expect(await closed).toBe(0);
  });
});

/** A stdio MCP server with one tool, as small as the protocol allows. */
const SHOUTER = `
import { createInterface } from "node:readline";
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\\n");
createInterface({ input: process.stdin }).on("line", (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === "initialize")
    return send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "shouter", version: "1.0.0" } } });
  if (method === "tools/list")
    return send({ id, result: { tools: [{ name: "shout", description: "Upper-cases text", inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] } }] } });
  if (method === "tools/call")
    return send({ id, result: { content: [{ type: "text", text: String(params.arguments.text).toUpperCase() }] } });
  send({ id, error: { code: -32601, message: "no method " + method } });
});
`;
