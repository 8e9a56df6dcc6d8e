import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { rootCertificates } from "node:tls";
import type { ExtensionAPI, ToolDefinition } from "@earendil-works/pi-coding-agent";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { ActionsUnreachable, callActions } from "../../extensions/lib/action-host-client.ts";
import { gatesReport, propose } from "../../extensions/lib/action-words.ts";
import registerActions from "../../extensions/proposals.ts";
import { sendToolList } from "../../runner/ground/chat/terms.ts";
import { readJournal } from "../../runner/records/journal/journal.ts";
import { runDir } from "../../runner/records/run-records/run-record.ts";
import { denyGate } from "../../runner/services/actions/desk.ts";
import { findGate } from "../../runner/services/actions/gates.ts";
import { type GatewayEnv, proxyUrlFor, startGatewayEnv } from "../support/gateway-env.ts";

/**
 * The box's action tools against the real gateway and the real action host:
 * what the model reads back for each outcome, and for every way the host can
 * fail to answer.
 */
let env: GatewayEnv;

const ORG = `
[[action]]
name = "message-user"
executor = "message-user"
trust = "auto"

[[action]]
name = "email-send"
executor = "email"

[[action]]
name = "file-update"
executor = "self"
trust = "auto"
`;

type Tool = ToolDefinition;

/** The tools the extension registers, as pi would see them, given the box's environment now. */
function loadTools(): Map<string, Tool> {
  const tools = new Map<string, Tool>();
  const pi = { registerTool: (tool: Tool) => tools.set(tool.name, tool) };
  registerActions(pi as unknown as ExtensionAPI);
  return tools;
}

async function call(name: string, params: Record<string, unknown>) {
  const tool = loadTools().get(name);
  if (!tool) throw new Error(`no tool ${name}`);
  const result = await tool.execute("call-1", params, undefined, undefined, undefined as never);
  const first = result.content[0];
  return {
    text: first?.type === "text" ? first.text : "",
    isError: (result as { isError?: boolean }).isError ?? false,
    details: result.details as Record<string, unknown>,
  };
}

/** The environment a box gets: the proxy with a run token, the roster CA, the chat platforms' send tools. */
async function asBox(runId: string, taskId?: string) {
  const token = await env.token("elf", runId);
  vi.stubEnv("HTTPS_PROXY", proxyUrlFor(env, token));
  vi.stubEnv("NO_PROXY", "");
  vi.stubEnv("NODE_EXTRA_CA_CERTS", join(env.paths.ca, "ca.crt"));
  vi.stubEnv("ROSTER_TASK_ID", taskId ?? "");
  vi.stubEnv("ROSTER_CHAT_SENDS", sendToolList());
  return token;
}

beforeAll(async () => {
  env = await startGatewayEnv(ORG);
  await mkdir(join(env.paths.config, "workers", "elf"), { recursive: true });
  await writeFile(join(env.paths.config, "workers", "elf", "worker.toml"), 'name = "elf"\n');
  await new Promise((resolve) => setTimeout(resolve, 600)); // the gateway sees the new worker
});
afterAll(async () => {
  await env?.cleanup();
});
afterEach(() => {
  vi.unstubAllEnvs();
});

describe("the tools a model sees", () => {
  it("registers the proposal tools, and task_complete/task_fail only in a task run", async () => {
    await asBox("run-names");
    const names = [...loadTools().keys()];
    expect(names).toEqual([
      "message_user",
      "send_email",
      "discord_send",
      "slack_send",
      "term_send",
      "file_task",
      "set_tasks",
      "file_update",
      "propose_purpose_edit",
      "check_gates",
    ]);
    await asBox("run-task", "t-123");
    expect([...loadTools().keys()].slice(-2)).toEqual(["task_complete", "task_fail"]);
    for (const tool of loadTools().values()) {
      expect(tool.description.length, tool.name).toBeGreaterThan(40);
      expect((tool.parameters as { type?: string }).type, tool.name).toBe("object");
    }
  });

  it("done: message_user runs at once and says what became of it", async () => {
    await asBox("run-done");
    const result = await call("message_user", { text: "the report is ready" });
    expect(result).toMatchObject({
      text: 'done: "message-user" ran. Result: delivered: inbox.',
      isError: false,
    });
    expect(readFileSync(join(env.paths.audit, "messages.jsonl"), "utf8")).toContain(
      '"text":"the report is ready"',
    );
  });

  it("pending: send_email is held as a gate, with the id and the words to stop", async () => {
    await asBox("run-pending", "t-42");
    const result = await call("send_email", {
      to: ["Boss <boss@example.test>"],
      subject: "Numbers",
      body: "They are in.",
      rationale: "the lead asked",
    });
    expect(result.isError).toBe(false);
    expect(result.text).toMatch(
      /^pending: gate g-[0-9a-f]{8} — held for human approval \(gate by .*\)\. Stop here; a human decides; a later run sees the outcome in ~\/self\/journal\./,
    );
    const gateId = /g-[0-9a-f]{8}/.exec(result.text)?.[0] ?? "";
    expect(result.details.gate_id).toBe(gateId);
    const gate = findGate(env.paths, gateId);
    expect(gate).toMatchObject({
      state: "pending",
      intent: "email-send",
      run_id: "run-pending",
      task_id: "t-42",
      rationale: "the lead asked",
      payload: { to: ["Boss <boss@example.test>"], subject: "Numbers", body: "They are in." },
    });
  });

  it("denied: an intent the operator never granted, and retrying won't help", async () => {
    await asBox("run-denied");
    const result = await call("discord_send", { channel_id: "123", text: "hi" });
    expect(result).toMatchObject({
      text: `denied: no action grant for "discord-send". Retrying won't help: only the operator can change which actions you may propose.`,
      isError: true,
    });
    const purpose = await call("propose_purpose_edit", {
      channel_id: "c1",
      purpose: "release chatter",
      rationale: "the channel drifted",
    });
    expect(purpose.text).toContain('denied: no action grant for "purpose-edit"');
  });

  it("bad params: the host's validation names the field, and says to fix it", async () => {
    await asBox("run-bad");
    const result = await call("send_email", {
      to: ["not an address"],
      subject: "s",
      body: "b",
      rationale: "r",
    });
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(
      /^error: bad envelope: payload\.to\.0: .+\. Nothing was filed; fix that and call send_email again\.$/,
    );
    const empty = await call("message_user", { text: "" });
    expect(empty.text).toMatch(/^error: bad envelope: payload\.text: /);
  });

  it("optional fields left out are not sent (the host refuses unknown or undefined keys)", async () => {
    await asBox("run-optional");
    const result = await call("message_user", { text: "no rationale here" });
    expect(result.text).toMatch(/^done: /);
  });

  it("check_gates: the worker's gates and journal, with the human's note", async () => {
    await asBox("run-check");
    const filed = await call("send_email", {
      to: ["someone@example.test"],
      subject: "Later",
      body: "b",
      rationale: "r",
    });
    const gateId = /g-[0-9a-f]{8}/.exec(filed.text)?.[0] ?? "";
    await denyGate(env.paths, findGate(env.paths, gateId), { by: "cli:ann", note: "not now" });
    const report = await call("check_gates", {});
    expect(report.isError).toBe(false);
    expect(report.text).toMatch(/^gates: \d+ \(\d+ pending\), oldest first:$/m);
    expect(report.text).toMatch(
      new RegExp(`^${gateId} email-send denied, by cli:ann at [0-9: -]{16} — note: not now$`, "m"),
    );
    expect(report.text).toMatch(/^journal: the last 10 events, oldest first:$/m);
    expect(report.text).toMatch(
      new RegExp(`denied email-send ${gateId} — by: cli:ann; note: not now$`, "m"),
    );
  });

  it("task_complete and task_fail report the run's outcome beside its record", async () => {
    await asBox("run-outcome", "t-7");
    const done = await call("task_complete", { note: "all shipped" });
    expect(done).toMatchObject({
      text: "done: the task is recorded as completed.",
      isError: false,
    });
    const outcome = JSON.parse(
      readFileSync(join(runDir(env.paths.state, "elf", "run-outcome"), "outcome.json"), "utf8"),
    );
    expect(outcome).toMatchObject({ status: "completed", note: "all shipped" });
    const failed = await call("task_fail", { note: "blocked on access" });
    expect(failed.text).toBe("done: the task is recorded as failed.");
    expect(readJournal(env.paths, "elf").at(-1)).toMatchObject({
      kind: "outcome-reported",
      run_id: "run-outcome",
      detail: "blocked on access",
    });
  });

  it("file_update: a stale base hash is refused before filing, naming the field; a fresh one runs", async () => {
    await asBox("run-self");
    const file = join(env.paths.config, "workers", "elf", "worker.toml");
    const before = readFileSync(file, "utf8");
    const stale = await call("file_update", {
      path: "config/worker.toml",
      base_hash: "0".repeat(64),
      content: `${before}# tidied\n`,
      rationale: "tidy",
    });
    expect(stale.isError).toBe(true);
    expect(stale.text).toMatch(
      /^error: payload\.base_hash: worker\.toml changed since \(its sha256 is now [0-9a-f]{64}\); read it again and propose against that\. Nothing was filed; fix that and call file_update again\.$/,
    );
    const fresh = await call("file_update", {
      path: "config/worker.toml",
      base_hash: createHash("sha256").update(before).digest("hex"),
      content: `${before}# tidied\n`,
      rationale: "tidy",
    });
    expect(fresh.text).toMatch(
      /^done: "file-update" ran\. Result: status: ok; sha256: [0-9a-f]{64}\.$/,
    );
    expect(readFileSync(file, "utf8")).toBe(`${before}# tidied\n`);
  });

  it("a box without a run token is refused by the host, in words", async () => {
    vi.stubEnv("HTTPS_PROXY", proxyUrlFor(env, undefined));
    vi.stubEnv("NODE_EXTRA_CA_CERTS", join(env.paths.ca, "ca.crt"));
    const result = await call("message_user", { text: "hi" });
    expect(result.text).toBe(
      "denied: no run token: only a box's own run may propose. Retrying won't help: only the operator can change which actions you may propose.",
    );
  });
});

describe("when the host can't be reached", () => {
  let silent: Server;
  const held: Socket[] = [];
  beforeAll(async () => {
    // a proxy that accepts and then never says a word
    silent = createServer((socket) => {
      held.push(socket);
      socket.on("error", () => undefined);
    });
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  });
  afterAll(async () => {
    for (const socket of held) socket.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });

  it("no proxy: the tool says so instead of trying to go direct", async () => {
    vi.stubEnv("HTTPS_PROXY", "");
    vi.stubEnv("HTTP_PROXY", "");
    vi.stubEnv("https_proxy", "");
    vi.stubEnv("http_proxy", "");
    const result = await call("message_user", { text: "hi" });
    expect(result).toMatchObject({
      text: "error: could not reach the action host (no proxy in the environment (HTTPS_PROXY): the action host is reached only through the gateway); nothing was proposed.",
      isError: true,
    });
  });

  it("a proxy that refuses the connection: a clear error line, never a throw", async () => {
    const port = (silent.address() as { port: number }).port;
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const deadPort = (closed.address() as { port: number }).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    expect(deadPort).not.toBe(port);
    vi.stubEnv("HTTPS_PROXY", `http://t:x@127.0.0.1:${deadPort}`);
    const result = await call("check_gates", {});
    expect(result.text).toMatch(/^error: could not reach the action host \(.*ECONNREFUSED.*\)\.$/);
  });

  it("silence: the deadline ends it, and the model is told the proposal may have been filed", async () => {
    const port = (silent.address() as { port: number }).port;
    vi.stubEnv("HTTPS_PROXY", `http://t:x@127.0.0.1:${port}`);
    const started = Date.now();
    const result = await propose("message_user", "message-user", { text: "hi" }, undefined, {
      timeoutMs: 400,
    });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(result.content[0]?.text).toBe(
      "error: the action host gave no answer within 400 ms; the proposal may or may not have been filed — call check_gates before proposing it again.",
    );
    const report = await gatesReport({ timeoutMs: 400 });
    expect(report.content[0]?.text).toBe("error: the action host gave no answer within 400 ms.");
  });

  it("the tool's own abort signal cancels the call", async () => {
    const port = (silent.address() as { port: number }).port;
    vi.stubEnv("HTTPS_PROXY", `http://t:x@127.0.0.1:${port}`);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    await expect(
      callActions("GET", "/gates", undefined, { signal: controller.signal }),
    ).rejects.toThrow(new ActionsUnreachable("cancelled"));
  });
});

describe("the client", () => {
  it("GETs and POSTs JSON through the gateway with the run's token", async () => {
    await asBox("run-client");
    const gates = await callActions("GET", "/gates");
    expect(gates.status).toBe(200);
    expect(Array.isArray(gates.body.gates)).toBe(true);
    const refused = await callActions("POST", "/submit", { intent: "nope", payload: {} });
    expect(refused).toEqual({
      status: 403,
      body: { status: "denied", reason: 'no action grant for "nope"' },
    });
  });

  it("bounds the reply's size", async () => {
    await asBox("run-big");
    await expect(callActions("GET", "/journal", undefined, { maxBytes: 10 })).rejects.toThrow(
      "the reply was over 10 bytes",
    );
  });

  it("trusts only what it is given: a wrong CA fails the TLS handshake", async () => {
    await asBox("run-ca");
    await expect(
      callActions("GET", "/gates", undefined, { ca: [...rootCertificates] }),
    ).rejects.toThrow(/certificate/);
  });
});
