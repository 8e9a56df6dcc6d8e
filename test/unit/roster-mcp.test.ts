/**
 * engine/roster-mcp.ts: the box's tools as an MCP server, for Claude Code and
 * Codex. Started as the box starts it (node, stdio) against the real
 * extensions/ folder and a folder of the test's own: a dropped-in tool, one
 * that throws at load, one that reaches for a part of pi the server lacks. The
 * MCP client is the official SDK's, over a stdio transport that keeps every
 * line the server wrote, so the test can say nothing but JSON-RPC came out.
 *
 * Node 24 runs the server as the box does (its types stripped); an older Node
 * (the host's 20) can't strip types, so it runs under tsx there.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { type JSONRPCMessage, JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { PROJECT_ROOT } from "../../runner/ground/version.ts";
import { resultText } from "../support/mcp-clients.ts";

const SERVER = join(PROJECT_ROOT, "engine/roster-mcp.ts");
const EXTENSIONS = join(PROJECT_ROOT, "extensions");
const strips = typeof Reflect.get(process.features, "typescript") === "string";

// A tool file dropped in: TypeScript pi accepts (a parameter property, which
// Node's type stripping refuses), TypeBox as every extension imports it, and
// noise on stdout.
const DROPPED = `
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Type } from "@sinclair/typebox";

class Repeater {
  constructor(private readonly times: number) {}
  say(text: string): string { return Array(this.times).fill(text).join(" "); }
}
const marks = process.env.TEST_MARKS ?? "";

export default function dropped(pi: any): void {
  console.log("dropped: loading (console.log)");
  process.stdout.write("dropped: a raw write to stdout\\n");
  pi.registerTool({
    name: "shout",
    label: "Shout",
    description: "Says the text back in capitals.",
    parameters: Type.Object({
      text: Type.String({ minLength: 1, description: "what to shout" }),
      times: Type.Optional(Type.Integer({ minimum: 1, maximum: 3 })),
    }),
    async execute(_id: string, params: { text: string; times?: number }) {
      console.info("dropped: shouting (console.info)");
      return { content: [{ type: "text", text: new Repeater(params.times ?? 1).say(params.text.toUpperCase()) }], details: {} };
    },
  });
  pi.registerTool({
    name: "explode",
    label: "Explode",
    description: "Always throws.",
    parameters: Type.Object({}),
    execute() { throw new Error("explode went off on purpose"); },
  });
  pi.registerTool({
    name: "wait_for_cancel",
    label: "Wait",
    description: "Runs until the call is cancelled.",
    parameters: Type.Object({}),
    execute: (_id: string, _params: unknown, signal: AbortSignal) =>
      new Promise((resolve) => {
        writeFileSync(join(marks, "waiting"), "yes");
        signal.addEventListener("abort", () => {
        writeFileSync(join(marks, "cancelled"), "yes");
          resolve({ content: [{ type: "text", text: "cancelled" }], details: {} });
        });
      }),
  });
  pi.on("before_agent_start", (event: { systemPrompt: string }) => ({
    systemPrompt: event.systemPrompt + "\\n\\nShout only when asked.",
  }));
  pi.on("session_shutdown", () => writeFileSync(join(marks, "shutdown"), "done"));
}
`;
const BROKEN = `export default function broken(): void { throw new Error("broken on purpose"); }\n`;
const STRANGER = `export default function stranger(pi: any): void { pi.registerCommand("hello", {}); }\n`;

function jsonRpc(line: string): JSONRPCMessage | undefined {
  try {
    const parsed = JSONRPCMessageSchema.safeParse(JSON.parse(line));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** The SDK's stdio framing over a child we hold, keeping each line the child wrote. */
class RecordedStdio implements Transport {
  readonly lines: string[] = [];
  onmessage?: (message: JSONRPCMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  private readonly child: ChildProcessWithoutNullStreams;
  constructor(child: ChildProcessWithoutNullStreams) {
    this.child = child;
  }
  async start(): Promise<void> {
    createInterface({ input: this.child.stdout }).on("line", (line) => {
      this.lines.push(line);
      const message = jsonRpc(line);
      if (message) this.onmessage?.(message);
    });
    this.child.on("exit", () => this.onclose?.());
  }
  async send(message: JSONRPCMessage): Promise<void> {
    this.child.stdin.write(serializeMessage(message));
  }
  async close(): Promise<void> {
    this.child.stdin.end();
  }
}

interface Started {
  client: Client;
  transport: RecordedStdio;
  child: ChildProcessWithoutNullStreams;
  marks: string;
  stderr: () => string;
  exited: Promise<number | null>;
}

const folders: string[] = [];
function folder(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  folders.push(dir);
  return dir;
}

async function start(taskId: string | undefined, dropIns: string): Promise<Started> {
  const marks = folder("roster-mcp-marks-");
  // nothing of the host's run reaches the server but what the test sets
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith("ROSTER_")),
  );
  const child = spawn(
    process.execPath,
    [...(strips ? [] : ["--import", "tsx"]), SERVER, EXTENSIONS, dropIns],
    {
      cwd: PROJECT_ROOT,
      env: {
        ...env,
        TEST_MARKS: marks,
        ROSTER_REPOS_JSON: JSON.stringify([
          { connection: "demo", dir: marks, branch: "run/1", target: "main", mode: "write" },
        ]),
        ...(taskId ? { ROSTER_TASK_ID: taskId } : {}),
      },
    },
  );
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((done) => child.on("exit", (code) => done(code)));
  const transport = new RecordedStdio(child);
  const client = new Client({ name: "roster-test", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport, child, marks, stderr: () => stderr, exited };
}

async function toolNames(client: Client): Promise<string[]> {
  return (await client.listTools()).tools.map((tool) => tool.name);
}

describe("the roster MCP server", () => {
  let dropIns: string;
  let task: Started;

  beforeAll(async () => {
    dropIns = folder("roster-mcp-ext-");
    writeFileSync(join(dropIns, "dropped.ts"), DROPPED);
    writeFileSync(join(dropIns, "broken.ts"), BROKEN);
    writeFileSync(join(dropIns, "stranger.ts"), STRANGER);
    task = await start("t-0000abcd", dropIns);
  });

  afterAll(async () => {
    task.child.kill("SIGKILL");
    for (const dir of folders) rmSync(dir, { recursive: true, force: true });
  });

  it("serves the box's tools, and a dropped-in one with its schema", async () => {
    const { tools } = await task.client.listTools();
    const names = tools.map((tool) => tool.name);
    expect(names).toEqual(
      expect.arrayContaining([
        "web_search",
        "fetch_pages",
        "message_user",
        "file_task",
        "repo_push",
        "task_complete",
        "task_fail",
        "shout",
      ]),
    );
    expect(tools.find((tool) => tool.name === "shout")?.inputSchema).toMatchObject({
      type: "object",
      required: ["text"],
      properties: { text: { type: "string", minLength: 1 }, times: { type: "integer" } },
    });
    const shouted = await task.client.callTool({
      name: "shout",
      arguments: { text: "hello", times: 2 },
    });
    expect(shouted.isError).toBeFalsy();
    expect(resultText(shouted)).toBe("HELLO HELLO");
  });

  it("tells the agent what pi's system prompt would have gained", () => {
    expect(task.client.getInstructions()).toContain("Shout only when asked.");
  });

  it("refuses a call whose arguments don't fit, naming the field", async () => {
    const bad = await task.client.callTool({ name: "shout", arguments: { text: "" } });
    expect(bad.isError).toBe(true);
    expect(resultText(bad)).toMatch(/shout: text: .*1/);
    const missing = await task.client.callTool({
      name: "file_task",
      arguments: { ceiling_min: "soon" },
    });
    expect(missing.isError).toBe(true);
    expect(resultText(missing)).toContain("prompt: is required");
    expect(resultText(missing)).toContain("ceiling_min");
  });

  it("turns a tool that throws into an error result and keeps serving", async () => {
    const thrown = await task.client.callTool({ name: "explode", arguments: {} });
    expect(thrown.isError).toBe(true);
    expect(resultText(thrown)).toContain("explode went off on purpose");
    const after = await task.client.callTool({ name: "shout", arguments: { text: "still" } });
    expect(resultText(after)).toBe("STILL");
  });

  it("aborts a call's signal when the client cancels it", async () => {
    const cancel = new AbortController();
    const call = task.client.callTool({ name: "wait_for_cancel", arguments: {} }, undefined, {
      signal: cancel.signal,
    });
    // cancelled once the tool runs, so the cancel reaches a running call
    await vi.waitFor(() => expect(existsSync(join(task.marks, "waiting"))).toBe(true), {
      timeout: 10_000,
    });
    cancel.abort("the test cancels");
    await expect(call).rejects.toThrow();
    await vi.waitFor(() => expect(existsSync(join(task.marks, "cancelled"))).toBe(true), {
      timeout: 10_000,
    });
  });

  it("skips an extension that throws at load, or reaches for what it lacks, naming it", async () => {
    expect(task.stderr()).toMatch(
      /the broken extension \(.*broken\.ts\) failed to load.*broken on purpose/,
    );
    expect(task.stderr()).toMatch(/the stranger extension .*pi\.registerCommand/);
    expect(await toolNames(task.client)).toContain("shout");
  });

  it("writes nothing but JSON-RPC on stdout: what extensions print goes to stderr", async () => {
    await task.client.callTool({ name: "shout", arguments: { text: "noise" } });
    expect(task.transport.lines.length).toBeGreaterThan(0);
    for (const line of task.transport.lines)
      expect(jsonRpc(line), `not JSON-RPC on stdout: ${line}`).toBeDefined();
    expect(task.stderr()).toContain("dropped: loading (console.log)");
    expect(task.stderr()).toContain("dropped: a raw write to stdout");
    expect(task.stderr()).toContain("dropped: shouting (console.info)");
  });

  it("runs session_shutdown handlers and ends when stdin closes", async () => {
    await task.client.close();
    expect(await task.exited).toBe(0);
    expect(readFileSync(join(task.marks, "shutdown"), "utf8")).toBe("done");
  });

  it("has no outcome tools outside a task run, and shuts down on SIGTERM", async () => {
    const chat = await start(undefined, dropIns);
    try {
      const names = await toolNames(chat.client);
      expect(names).toEqual(expect.arrayContaining(["message_user", "file_task", "shout"]));
      expect(names).not.toContain("task_complete");
      expect(names).not.toContain("task_fail");
      chat.child.kill("SIGTERM");
      expect(await chat.exited).toBe(0);
      expect(readFileSync(join(chat.marks, "shutdown"), "utf8")).toBe("done");
    } finally {
      chat.child.kill("SIGKILL");
    }
  });
});
