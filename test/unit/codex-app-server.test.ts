import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { agentEvents } from "../../runner/work/runs/agent-events.ts";
import { CodexAppServer } from "../../runner/work/sessions/codex-app-server.ts";
import { PiRpc, type TurnResult } from "../../runner/work/sessions/pi-rpc.ts";

/**
 * A Codex warm session's two halves without a box: what `codex app-server`
 * writes, read as pi's events (runs/codex-events.ts), and the host's side of
 * its protocol (sessions/codex-app-server.ts) driven through PiRpc as a
 * session drives it. The lines are Codex 0.171.0's own, recorded against the
 * Responses API double, with the fields no reader looks at left out.
 */
const THREAD = "01a24c00-b927-7372-a27d-0c32678509ed";
const TURN = "01a24c00-bcd1-7001-9a62-1086d861973b";

const json = (value: object) => JSON.stringify(value);
const note = (method: string, params: object) =>
  json({ method, params: { threadId: THREAD, turnId: TURN, ...params } });
const item = (method: string, body: object) => note(method, { item: body });

const OPENED = [
  json({ id: "initialize", result: { userAgent: "roster/0.171.0", platformOs: "linux" } }),
  json({ id: "thread", result: { thread: { id: THREAD, turns: [] }, approvalPolicy: "never" } }),
  json({ method: "thread/started", params: { thread: { id: THREAD } } }),
];

const command = { type: "commandExecution", id: "call_1_0", command: "/bin/bash -lc 'echo hi'" };
const ping = { type: "mcpToolCall", id: "call_3_0", server: "roster", tool: "ping", arguments: {} };

/** A turn with a shell command, one of our tools, and a streamed answer. */
const FIRST_TURN = [
  json({ id: "turn-1", result: { turn: { id: TURN, items: [], status: "inProgress" } } }),
  note("turn/started", { turn: { id: TURN, items: [], status: "inProgress" } }),
  item("item/started", { type: "userMessage", id: "u1", content: [{ type: "text", text: "go" }] }),
  item("item/completed", {
    type: "userMessage",
    id: "u1",
    content: [{ type: "text", text: "go" }],
  }),
  item("item/started", { ...command, status: "inProgress", aggregatedOutput: null }),
  item("item/completed", {
    ...command,
    status: "completed",
    aggregatedOutput: "hi\n",
    exitCode: 0,
  }),
  item("item/started", { ...ping, status: "inProgress", result: null, error: null }),
  item("item/completed", {
    ...ping,
    status: "completed",
    result: { content: [{ type: "text", text: "pong" }], structuredContent: null },
    error: null,
  }),
  item("item/started", { type: "agentMessage", id: "msg_4", text: "" }),
  note("item/agentMessage/delta", { itemId: "msg_4", delta: "first" }),
  note("item/agentMessage/delta", { itemId: "msg_4", delta: " done" }),
  item("item/completed", { type: "agentMessage", id: "msg_4", text: "first done" }),
  note("thread/tokenUsage/updated", { tokenUsage: { total: { totalTokens: 30 } } }),
  note("turn/completed", { turn: { id: TURN, items: [], status: "completed", error: null } }),
];

const REFUSED = "unexpected status 401 Unauthorized: scripted failure 401";
/** A turn the model refused: Codex says so twice, once as an error and once as the turn's end. */
const FAILED_TURN = [
  json({ id: "turn-2", result: { turn: { id: TURN, items: [], status: "inProgress" } } }),
  note("turn/started", { turn: { id: TURN, items: [], status: "inProgress" } }),
  note("error", { error: { message: REFUSED }, willRetry: false }),
  note("turn/completed", {
    turn: { id: TURN, items: [], status: "failed", error: { message: REFUSED } },
  }),
];

const session = { agent: "codex", kind: "session" } as const;

/** A session's host side on a stdin that keeps what it is told, fed the box's lines as the run owner feeds them. */
function drive() {
  const stdin = new PassThrough();
  const written: Record<string, unknown>[] = [];
  stdin.on("data", (chunk: Buffer) => {
    for (const line of chunk.toString("utf8").split("\n").filter(Boolean))
      written.push(JSON.parse(line) as Record<string, unknown>);
  });
  const writer = new CodexAppServer({ model: "gpt-5.5", cwd: "/home/roster/workspace" });
  const rpc = new PiRpc(stdin, () => undefined, writer);
  const reader = agentEvents(session);
  const box = (lines: string[]) => {
    for (const line of lines) for (const event of reader.read(line)) rpc.line(json(event));
  };
  return { rpc, box, written };
}

const until = async (check: () => boolean, what: string) => {
  for (let tries = 0; !check(); tries++) {
    if (tries > 200) throw new Error(`never saw ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};

describe("a Codex session's app-server stream, read as pi's events", () => {
  it("reads tools, a streamed answer and the turn's end; a refused turn ends with its error", () => {
    const reader = agentEvents(session);
    const events = [...OPENED, ...FIRST_TURN, ...FAILED_TURN].flatMap((line) => reader.read(line));
    expect(events.map((event) => event.type)).toEqual([
      "response",
      "response",
      "agent_start",
      "response",
      "turn_start",
      "message_end",
      "tool_execution_start",
      "tool_execution_end",
      "tool_execution_start",
      "tool_execution_end",
      "message_start",
      "message_update",
      "message_update",
      "message_end",
      "agent_end",
      "agent_settled",
      "response",
      "turn_start",
      "message_end",
      "agent_end",
      "agent_settled",
    ]);
    expect(events[5]).toMatchObject({ message: { role: "user", content: [{ text: "go" }] } });
    expect(events[6]).toMatchObject({
      toolName: "shell",
      args: { command: "/bin/bash -lc 'echo hi'" },
    });
    expect(events[7]).toMatchObject({ result: { content: [{ text: "hi\n" }] }, isError: false });
    expect(events[9]).toMatchObject({ toolName: "ping", result: { content: [{ text: "pong" }] } });
    expect(events[13]).toMatchObject({ message: { content: [{ text: "first done" }] } });
    expect(events[18]).toMatchObject({
      message: { role: "assistant", stopReason: "error", errorMessage: REFUSED },
    });
    // the same lines from a run's exec stream mean nothing: a session's record picks this reader
    const exec = agentEvents({ agent: "codex", kind: "box" });
    expect([...OPENED, ...FIRST_TURN].flatMap((line) => exec.read(line))).toEqual([]);
  });

  it("drops what it can't read, and keeps only ids a JSON-RPC answer may carry", () => {
    const reader = agentEvents(session);
    for (const line of ["", "not json", "[1]", json({ id: { x: 1 }, result: {} }), "{"])
      expect(reader.read(line)).toEqual([]);
    expect(reader.read(json({ id: 7, method: "item/tool/requestUserInput", params: {} }))).toEqual([
      { type: "agent_request", id: 7, method: "item/tool/requestUserInput" },
    ]);
  });
});

describe("a Codex session's host side", () => {
  it("shakes hands, holds the first turn for the thread, and sends each turn on it", async () => {
    const { rpc, box, written } = drive();
    await until(() => written.length === 3, "the opening");
    expect(written.map((line) => line.method)).toEqual([
      "initialize",
      "initialized",
      "thread/start",
    ]);
    expect(written[2]).toMatchObject({
      id: "thread",
      params: { model: "gpt-5.5", cwd: "/home/roster/workspace" },
    });
    const first = rpc.prompt("go");
    // no thread yet: the message waits for it
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(written).toHaveLength(3);
    box(OPENED);
    await until(() => written.length === 4, "the first turn");
    expect(written[3]).toEqual({
      id: "turn-1",
      method: "turn/start",
      params: { threadId: THREAD, input: [{ type: "text", text: "go", text_elements: [] }] },
    });
    box(FIRST_TURN);
    const done: TurnResult = await first;
    expect(done).toEqual({
      texts: ["first done"],
      tools: ["shell", "ping"],
      modelError: undefined,
    });

    const second = rpc.prompt("again");
    await until(() => written.length === 5, "the second turn");
    expect(written[4]).toMatchObject({ id: "turn-2", params: { threadId: THREAD } });
    box(FAILED_TURN);
    expect((await second).modelError).toBe(REFUSED);
  });

  it("answers Codex's requests so no turn waits: an approval with yes, anything else refused", async () => {
    const { rpc, box, written } = drive();
    box(OPENED);
    const turn = rpc.prompt("go");
    await until(() => written.length === 4, "the turn");
    box([
      json({ id: 0, method: "item/commandExecution/requestApproval", params: { itemId: "c" } }),
      json({ id: 1, method: "item/fileChange/requestApproval", params: { itemId: "f" } }),
      json({ id: "x", method: "item/tool/requestUserInput", params: { questions: [] } }),
    ]);
    await until(() => written.length === 7, "the answers");
    expect(written.slice(4)).toEqual([
      { id: 0, result: { decision: "accept" } },
      { id: 1, result: { decision: "accept" } },
      { id: "x", error: { code: -32601, message: "roster answers no such request in a session" } },
    ]);
    box(FIRST_TURN);
    expect((await turn).texts).toEqual(["first done"]);
  });

  it("answers so many requests and no more, and none with an overlong id", async () => {
    const { rpc, box, written } = drive();
    box(OPENED);
    box([json({ id: "i".repeat(129), method: "item/fileChange/requestApproval", params: {} })]);
    box(Array.from({ length: 1100 }, (_, n) => json({ id: n, method: "made/up", params: {} })));
    // a turn still goes, its line after every answer that was written
    void rpc.prompt("go");
    await until(() => written.at(-1)?.method === "turn/start", "the turn");
    expect(written).toHaveLength(3 + 1024 + 1);
    expect(written[3]).toMatchObject({ id: 0 });
    expect(written[3 + 1023]).toMatchObject({ id: 1023 });
  });

  it("fails a turn at once, saying why, when Codex won't start its thread or take the message", async () => {
    const refusedThread = drive();
    const waiting = refusedThread.rpc.prompt("go");
    refusedThread.box([
      json({ id: "thread", error: { code: -32600, message: "model provider roster is unknown" } }),
    ]);
    await expect(waiting).rejects.toThrow(
      "the agent can't take messages: Codex would not start a thread: model provider roster is unknown",
    );

    const refusedTurn = drive();
    refusedTurn.box(OPENED);
    const turn = refusedTurn.rpc.prompt("go");
    await until(() => refusedTurn.written.length === 4, "the turn");
    refusedTurn.box([json({ id: "turn-1", error: { code: -32600, message: "thread not found" } })]);
    await expect(turn).rejects.toThrow("the agent refused the message: thread not found");
  });
});
