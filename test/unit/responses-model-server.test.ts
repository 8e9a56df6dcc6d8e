import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterEach, describe, expect, it } from "vitest";
import { outputText, ResponsesModelServer } from "../support/responses-model-server.ts";

interface SseEvent {
  event: string;
  data: Record<string, unknown> & { type: string; sequence_number: number };
}

/** Reads an SSE body into its events (what OpenAI's clients do). */
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

const responses = (server: ResponsesModelServer, body: object = {}) =>
  fetch(`${server.baseUrl()}/responses`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer sk-stand-in" },
    body: JSON.stringify({ model: "gpt-test", stream: true, input: [], ...body }),
  });

const ofType = (events: SseEvent[], type: string) =>
  events.filter((e) => e.data.type === type).map((e) => e.data);

let server: ResponsesModelServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

describe("the scripted Responses API server", () => {
  it("streams a message in the API's event order, ends with usage, and records the request", async () => {
    server = await new ResponsesModelServer([
      { text: "hello there", usage: { input: 1200, cached: 1024, output: 7, reasoning: 2 } },
    ]).start();
    const input = [
      { type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] },
    ];
    const events = await sse(await responses(server, { input }));
    expect(events.map((e) => e.data.type)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    // each event named on its `event:` line as on its `type`, numbered in order
    expect(events.every((e) => e.event === e.data.type)).toBe(true);
    expect(events.map((e) => e.data.sequence_number)).toEqual(events.map((_, i) => i));
    const deltas = ofType(events, "response.output_text.delta").map((d) => d.delta);
    expect(deltas.join("")).toBe("hello there");
    expect(ofType(events, "response.output_text.done")[0]?.text).toBe("hello there");
    const completed = ofType(events, "response.completed")[0]?.response as {
      status: string;
      model: string;
      output: Array<{ type: string; content: Array<{ text: string }> }>;
      usage: Record<string, unknown>;
    };
    expect(completed.status).toBe("completed");
    expect(completed.model).toBe("gpt-test");
    expect(completed.output[0]?.content[0]?.text).toBe("hello there");
    expect(completed.usage).toEqual({
      input_tokens: 1200,
      input_tokens_details: { cached_tokens: 1024 },
      output_tokens: 7,
      output_tokens_details: { reasoning_tokens: 2 },
      total_tokens: 1207,
    });
    const [request] = server.requests;
    expect(request?.method).toBe("POST");
    expect(request?.path).toBe("/v1/responses");
    expect(request?.headers.authorization).toBe("Bearer sk-stand-in");
    expect(request?.body.input).toEqual(input);
    expect(server.modelCalls).toHaveLength(1);
  });

  it("streams function calls with their arguments split across deltas, before the text", async () => {
    server = await new ResponsesModelServer([
      {
        toolCalls: [
          { name: "exec_command", arguments: { cmd: "echo hi > a.txt" }, id: "call_a" },
          { name: "echo", namespace: "mcp__roster", arguments: { text: "two" } },
        ],
        text: "running",
      },
    ]).start();
    const events = await sse(await responses(server));
    const added = ofType(events, "response.output_item.added").map(
      (d) => d.item as { type: string; name?: string; arguments?: string },
    );
    expect(added.map((item) => [item.type, item.name])).toEqual([
      ["function_call", "exec_command"],
      ["function_call", "echo"],
      ["message", undefined],
    ]);
    expect(added[0]?.arguments).toBe("");
    const deltas = ofType(events, "response.function_call_arguments.delta");
    const first = deltas.filter((d) => d.output_index === 0).map((d) => String(d.delta));
    expect(first).toHaveLength(2);
    expect(JSON.parse(first.join(""))).toEqual({ cmd: "echo hi > a.txt" });
    const done = ofType(events, "response.output_item.done").map(
      (d) => d.item as Record<string, unknown>,
    );
    expect(done[0]).toMatchObject({
      type: "function_call",
      status: "completed",
      call_id: "call_a",
      name: "exec_command",
      arguments: JSON.stringify({ cmd: "echo hi > a.txt" }),
    });
    expect(done[1]).toMatchObject({ name: "echo", namespace: "mcp__roster" });
    expect(ofType(events, "response.function_call_arguments.done")[1]?.arguments).toBe(
      JSON.stringify({ text: "two" }),
    );
  });

  it("streams a freeform tool's input in pieces, and a client-run tool search", async () => {
    const patch = "*** Begin Patch\n*** Add File: a.txt\n+a\n*** End Patch\n";
    server = await new ResponsesModelServer([
      {
        toolCalls: [
          { name: "apply_patch", input: patch },
          { name: "", search: { query: "echo" } },
        ],
      },
    ]).start();
    const events = await sse(await responses(server));
    const pieces = ofType(events, "response.custom_tool_call_input.delta").map((d) => d.delta);
    expect(pieces).toHaveLength(2);
    expect(pieces.join("")).toBe(patch);
    const done = ofType(events, "response.output_item.done").map(
      (d) => d.item as Record<string, unknown>,
    );
    expect(done[0]).toMatchObject({ type: "custom_tool_call", name: "apply_patch", input: patch });
    expect(done[1]).toMatchObject({
      type: "tool_search_call",
      execution: "client",
      arguments: { query: "echo" },
    });
  });

  it("fails on demand: an HTTP status, a slow answer, response.failed, a cut stream", async () => {
    server = await new ResponsesModelServer([
      { status: 429 },
      { text: "late", delayMs: 300 },
      { text: "half", failure: { code: "server_error", message: "boom" } },
      { text: "cut", omitCompleted: true },
    ]).start();
    const limited = await responses(server);
    expect(limited.status).toBe(429);
    expect(await limited.json()).toMatchObject({ error: { code: "rate_limit_exceeded" } });
    const started = Date.now();
    await (await responses(server)).text();
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    const failed = await sse(await responses(server));
    expect(failed.at(-1)?.data).toMatchObject({
      type: "response.failed",
      response: { status: "failed", error: { code: "server_error", message: "boom" } },
    });
    const cut = await sse(await responses(server));
    expect(cut.map((e) => e.data.type)).not.toContain("response.completed");
    expect(cut.at(-1)?.data.type).toBe("response.output_item.done");
  });

  it("decides a turn from the request, and reads back the tool outputs a client sent", async () => {
    server = await new ResponsesModelServer([
      (request) => ({ text: `got ${request.body.input?.length ?? 0} items` }),
    ]).start();
    const events = await sse(
      await responses(server, {
        input: [
          { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
          { type: "function_call_output", call_id: "c1", output: "plain" },
          {
            type: "custom_tool_call_output",
            call_id: "c2",
            output: [{ text: "pa" }, { text: "rt" }],
          },
        ],
      }),
    );
    expect(ofType(events, "response.output_text.done")[0]?.text).toBe("got 3 items");
    expect(server.toolOutputs()).toEqual([
      { call_id: "c1", output: "plain" },
      { call_id: "c2", output: "part" },
    ]);
    expect(outputText({ content: [{ text: "x" }] })).toBe("x");
  });

  it("answers the rest of the base URL sanely and records it: models, a WebSocket try, unknown paths", async () => {
    server = await new ResponsesModelServer().start();
    server.models = ["gpt-test"];
    const models = await fetch(`${server.baseUrl()}/models?client_version=1`);
    expect(await models.json()).toMatchObject({ object: "list", data: [{ id: "gpt-test" }] });
    // fetch can't ask for an upgrade; a plain request can, as Codex's WebSocket client does
    const upgrade = await new Promise<number | undefined>((resolve, reject) => {
      const req = request(`${server?.baseUrl()}/responses`, {
        headers: { connection: "Upgrade", upgrade: "websocket", "sec-websocket-version": "13" },
      });
      req.on("response", (res) => {
        res.resume();
        resolve(res.statusCode);
      });
      req.on("error", reject);
      req.end();
    });
    expect(upgrade).toBe(426);
    expect((await fetch(`${server.baseUrl()}/files`, { method: "POST" })).status).toBe(404);
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      "GET /v1/models?client_version=1",
      "GET /v1/responses",
      "POST /v1/files",
    ]);
    expect(server.modelCalls).toEqual([]);
  });
});

/**
 * The real Codex CLI against the double, when a binary is named (the box's own
 * tests drive it inside a box). It runs with the settings roster launches it
 * with: its own provider entry (plain HTTPS, no WebSocket, no model catalog
 * fetch), the key from an environment variable, nothing of its own reaching
 * out (analytics, plugin sync, web search), and every other host refused by a
 * recording proxy, so any attempt to reach one shows.
 */
const CODEX_BIN = process.env.ROSTER_TEST_CODEX_BIN;
const haveCodex = Boolean(CODEX_BIN && existsSync(CODEX_BIN));

interface CodexEvent {
  type: string;
  item?: Record<string, unknown> & { type: string };
  usage?: Record<string, number>;
  error?: { message: string };
  [key: string]: unknown;
}

/** A proxy that refuses every CONNECT and records the host it was asked for. */
async function refusingProxy(): Promise<{ server: Server; url: string; hosts: string[] }> {
  const hosts: string[] = [];
  const proxy = createServer((req, res) => {
    hosts.push(req.headers.host ?? String(req.url));
    res.writeHead(403).end();
  });
  proxy.on("connect", (req, socket) => {
    hosts.push(String(req.url));
    socket.end("HTTP/1.1 403 Forbidden\r\n\r\n");
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const { port } = proxy.address() as AddressInfo;
  return { server: proxy, url: `http://127.0.0.1:${port}`, hosts };
}

/** Roster's settings for Codex, a provider at `baseUrl` whose key is in OPENAI_API_KEY. */
function codexSettings(baseUrl: string): string[] {
  const set = (key: string, value: string) => ["-c", `${key}=${value}`];
  return [
    ...set("model_provider", '"roster"'),
    ...set("model_providers.roster.name", '"roster"'),
    ...set("model_providers.roster.base_url", JSON.stringify(baseUrl)),
    ...set("model_providers.roster.env_key", '"OPENAI_API_KEY"'),
    ...set("model_providers.roster.wire_api", '"responses"'),
    ...set("model_providers.roster.request_max_retries", "0"),
    ...set("model_providers.roster.stream_max_retries", "0"),
    ...set("check_for_update_on_startup", "false"),
    ...set("analytics.enabled", "false"),
    ...set("feedback.enabled", "false"),
    ...set("otel.metrics_exporter", '"none"'),
    ...set("web_search", '"disabled"'),
    ...set("shell_environment_policy.ignore_default_excludes", "false"),
    ...["--disable", "plugins", "--disable", "unbounded_connection_retries"],
    "--strict-config",
  ];
}

describe.runIf(haveCodex)("Codex against the double", () => {
  let home: string | undefined;
  let proxy: Awaited<ReturnType<typeof refusingProxy>> | undefined;
  let running: ChildProcessWithoutNullStreams | undefined;
  afterEach(async () => {
    if (running?.exitCode === null) running.kill();
    running = undefined;
    await new Promise((resolve) => proxy?.server.close(resolve) ?? resolve(undefined));
    proxy = undefined;
    if (home) await rm(home, { recursive: true, force: true });
    home = undefined;
  });

  /** Codex in a fresh $HOME with an empty workspace, a clean environment, the proxy set. */
  async function launch(args: string[]): Promise<{
    child: ChildProcessWithoutNullStreams;
    workdir: string;
    lines: string[];
    closed: Promise<number | null>;
  }> {
    home = await mkdtemp(join(tmpdir(), "roster-codex-"));
    const workdir = join(home, "workspace");
    await mkdir(workdir);
    proxy = await refusingProxy();
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: home,
      OPENAI_API_KEY: "sk-stand-in",
      HTTPS_PROXY: proxy.url,
      HTTP_PROXY: proxy.url,
      NO_PROXY: "127.0.0.1",
    };
    const child = spawn(CODEX_BIN ?? "codex", args, {
      cwd: workdir,
      env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    running = child;
    const lines: string[] = [];
    createInterface({ input: child.stdout }).on("line", (line) => {
      if (line.trim()) lines.push(line);
    });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    const closed = new Promise<number | null>((resolve) =>
      child.once("close", (code) => {
        if (code !== 0) console.error(`codex exited ${code}: ${stderr}`);
        resolve(code);
      }),
    );
    return { child, workdir, lines, closed };
  }

  /** `codex exec` as roster runs it: JSON lines out, its own sandbox off, stdin closed. */
  async function exec(model: ResponsesModelServer, prompt: string) {
    const run = await launch([
      "exec",
      "--json",
      "--skip-git-repo-check",
      "--dangerously-bypass-approvals-and-sandbox",
      "--ignore-user-config",
      "-m",
      "gpt-5.5",
      ...codexSettings(model.baseUrl()),
      prompt,
    ]);
    // with stdin open, exec waits for it to close and adds what came as a <stdin> block
    run.child.stdin.end();
    const code = await run.closed;
    return { ...run, code, events: run.lines.map((line) => JSON.parse(line) as CodexEvent) };
  }

  it("runs a shell command the model asks for and ends the turn with its answer and usage", async () => {
    server = await new ResponsesModelServer([
      {
        toolCalls: [
          {
            name: "exec_command",
            arguments: { cmd: "echo from-codex > proof.txt && cat proof.txt" },
          },
        ],
      },
      (request) => {
        const output = request.body.input?.find((item) => item.type === "function_call_output");
        return {
          text: `saw: ${/from-codex/.test(outputText(output?.output)) ? "from-codex" : "nothing"}`,
          usage: { input: 300, cached: 256, output: 9 },
        };
      },
    ]).start();
    const { code, events, workdir } = await exec(server, "write proof.txt");
    expect(code).toBe(0);
    expect(events.map((e) => e.type)).toEqual([
      "thread.started",
      "turn.started",
      "item.started",
      "item.completed",
      "item.completed",
      "turn.completed",
    ]);
    const command = events.find((e) => e.type === "item.completed")?.item;
    expect(command).toMatchObject({
      type: "command_execution",
      aggregated_output: "from-codex\n",
      exit_code: 0,
      status: "completed",
    });
    expect(events.at(-2)?.item).toMatchObject({ type: "agent_message", text: "saw: from-codex" });
    // the turn's usage is the sum over its model calls (the first reports 10 in, 5 out)
    expect(events.at(-1)?.usage).toMatchObject({
      input_tokens: 310,
      cached_input_tokens: 256,
      output_tokens: 14,
    });
    expect(await readFile(join(workdir, "proof.txt"), "utf8")).toBe("from-codex\n");
    // two plain HTTPS calls with the key as a bearer token, the second carrying the output
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      "POST /v1/responses",
      "POST /v1/responses",
    ]);
    expect(server.requests.map((r) => r.headers.authorization)).toEqual([
      "Bearer sk-stand-in",
      "Bearer sk-stand-in",
    ]);
    const calls = server.modelCalls.map((r) => r.body);
    expect(calls[0]?.model).toBe("gpt-5.5");
    expect(calls[0]?.stream).toBe(true);
    expect(calls[0]?.tools?.map((tool) => tool.name ?? tool.type)).toContain("exec_command");
    expect(calls[0]?.tools?.map((tool) => tool.type)).not.toContain("web_search");
    expect(server.toolOutputs()[0]?.call_id).toBe("call_1_0");
    // the key is kept from the commands the model runs, and nothing else was reached
    expect(proxy?.hosts).toEqual([]);
  });

  it("keeps the key out of the model's shell", async () => {
    server = await new ResponsesModelServer([
      { toolCalls: [{ name: "exec_command", arguments: { cmd: "env" } }] },
      { text: "done" },
    ]).start();
    const { code, events } = await exec(server, "print the environment");
    expect(code).toBe(0);
    const command = events.find(
      (e) => e.item?.type === "command_execution" && e.type === "item.completed",
    );
    expect(String(command?.item?.aggregated_output)).toContain("HOME=");
    expect(String(command?.item?.aggregated_output)).not.toContain("sk-stand-in");
  });

  it("fails the turn at once on a refused model call, exiting non-zero", async () => {
    server = await new ResponsesModelServer([{ status: 401 }]).start();
    const { code, events } = await exec(server, "hi");
    expect(code).toBe(1);
    expect(events.at(-1)).toMatchObject({ type: "turn.failed" });
    expect(events.at(-1)?.error?.message).toContain("401");
    expect(server.modelCalls).toHaveLength(1);
  });

  it("keeps a warm session over stdio: two turns on one app-server thread", async () => {
    server = await new ResponsesModelServer([
      { text: "first answer" },
      (request) => ({ text: `second saw ${request.body.input?.length ?? 0} items` }),
    ]).start();
    const run = await launch(["app-server", ...codexSettings(server.baseUrl())]);
    const replies: Array<Record<string, unknown>> = [];
    createInterface({ input: run.child.stdout }).on("line", (line) => {
      replies.push(JSON.parse(line) as Record<string, unknown>);
    });
    let id = 0;
    const send = (method: string, params?: object) => {
      const message = params === undefined ? { method } : { id: ++id, method, params };
      run.child.stdin.write(`${JSON.stringify(message)}\n`);
      return id;
    };
    const until = async (check: () => Record<string, unknown> | undefined, what: string) => {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const found = check();
        if (found) return found;
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    const reply = (n: number) =>
      until(() => replies.find((r) => r.id === n && !r.method), `reply ${n}`);
    await reply(
      send("initialize", {
        clientInfo: { name: "roster", title: null, version: "0" },
        capabilities: null,
      }),
    );
    send("initialized");
    const started = await reply(
      send("thread/start", {
        model: "gpt-5.5",
        cwd: join(home ?? "", "workspace"),
        approvalPolicy: "never",
        sandbox: "danger-full-access",
        developerInstructions: "You work for roster.",
      }),
    );
    const threadId = (started.result as { thread: { id: string } }).thread.id;
    const finished = () => replies.filter((r) => r.method === "turn/completed").length;
    for (const [turn, text] of ["one", "two"].entries()) {
      await reply(
        send("turn/start", { threadId, input: [{ type: "text", text, text_elements: [] }] }),
      );
      await until(() => (finished() > turn ? {} : undefined), `turn ${text} to complete`);
    }
    const messages = replies
      .filter((r) => r.method === "item/completed")
      .map((r) => (r.params as { item: { type: string; text?: string } }).item)
      .filter((item) => item.type === "agentMessage")
      .map((item) => item.text);
    expect(messages).toEqual(["first answer", expect.stringMatching(/^second saw \d+ items$/)]);
    // the second call carries the first turn: one process, one thread, its history kept
    const [first, second] = server.modelCalls.map((r) => r.body.input?.length ?? 0);
    expect(second).toBeGreaterThan(first ?? 0);
    expect(JSON.stringify(server.modelCalls[1]?.body.input)).toContain("first answer");
    run.child.stdin.end();
    expect(await run.closed).toBe(0);
    expect(proxy?.hosts).toEqual([]);
  });
});
