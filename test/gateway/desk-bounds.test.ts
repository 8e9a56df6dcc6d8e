import { mkdir, writeFile } from "node:fs/promises";
import { request } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { denyGate } from "../../runner/services/actions/desk.ts";
import {
  MAX_HELD_CALL_BYTES,
  MAX_PENDING_GATES,
} from "../../runner/services/actions/desk-bounds.ts";
import { listGates } from "../../runner/services/actions/gates.ts";
import { submitAction } from "../support/action-host.ts";
import { type GatewayEnv, startGatewayEnv } from "../support/gateway-env.ts";

/**
 * What one worker may leave on the approval desk, through the real gateway
 * and its real action host: a held MCP call is no bigger than an ordinary
 * proposal's envelope, and a worker has a bounded number of undecided gates
 * (held calls and proposals together). Past either the box reads why, as a
 * JSON-RPC error or a refusal, and nothing is filed; a decision makes room.
 */
let env: GatewayEnv;
let token: string;

beforeAll(async () => {
  env = await startGatewayEnv(`
[gateway]
resolve = { "mcp.test" = "127.0.0.1" }

[[grant]]
name = "hold-writes"
verdict = "gate"
match = { host = "mcp.test", mcp = { tool = "*_create" } }

[[action]]
name = "note-user"
executor = "message-user"
trust = "gate"
`);
  await mkdir(join(env.paths.config, "workers/elf"), { recursive: true });
  await writeFile(join(env.paths.config, "workers/elf/worker.toml"), 'name = "elf"\n');
  await new Promise((resolve) => setTimeout(resolve, 600)); // the gateway sees the new worker
  token = await env.token("elf", "run-desk");
});
afterAll(async () => {
  await env?.cleanup();
});

interface RpcReply {
  status: number;
  result?: { content?: Array<{ text?: string }> };
  error?: { message: string };
}

/** A tools/call from the box, absolute-form through the gateway (nothing listens at mcp.test: held calls go nowhere). */
function callTool(id: number, name: string, args: Record<string, unknown>): Promise<RpcReply> {
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name, arguments: args },
  });
  return new Promise((resolve, reject) => {
    const ask = request(
      {
        host: "127.0.0.1",
        port: env.gateway.port,
        method: "POST",
        path: "http://mcp.test:9/mcp",
        headers: {
          host: "mcp.test:9",
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "content-length": Buffer.byteLength(body),
          "proxy-authorization": `Basic ${Buffer.from(`${token}:x`).toString("base64")}`,
        },
        agent: false,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => {
          const text = Buffer.concat(chunks).toString();
          resolve({ status: response.statusCode ?? 0, ...(JSON.parse(text) as object) });
        });
      },
    );
    ask.on("error", reject);
    ask.end(body);
  });
}

const pending = () => listGates(env.paths, "elf").filter((gate) => gate.state === "pending");

describe("the approval desk's bounds per worker", () => {
  it(`refuses to hold a call over ${MAX_HELD_CALL_BYTES / 1024} KiB, saying so, and files nothing`, async () => {
    const big = await callTool(1, "issues_create", {
      text: "x".repeat(MAX_HELD_CALL_BYTES + 1024),
    });
    expect(big.status).toBe(200);
    expect(big.error?.message).toMatch(
      /refused by the roster gateway \(rule "hold-writes"\).*over the 256 KiB a call held for approval may be/,
    );
    expect(pending()).toHaveLength(0);
    const small = await callTool(2, "issues_create", { text: "x".repeat(1000) });
    expect(small.error).toBeUndefined();
    expect(small.result?.content?.[0]?.text).toMatch(/held for human approval/);
    expect(pending()).toHaveLength(1);
  });

  it(`holds at most ${MAX_PENDING_GATES} undecided gates of one worker; a decision makes room`, async () => {
    for (let id = 3; pending().length < MAX_PENDING_GATES; id++) {
      const held = await callTool(id, "issues_create", { n: id });
      expect(held.error, `call ${id}`).toBeUndefined();
    }
    const over = await callTool(100, "issues_create", { n: 100 });
    expect(over.error?.message).toContain(
      `elf already has ${MAX_PENDING_GATES} proposals waiting for approval, the most one worker may`,
    );
    // an ordinary proposal meets the same bound
    const proposal = await submitAction(env, token, {
      intent: "note-user",
      payload: { text: "one more" },
    });
    expect(proposal.status).toBe(429);
    expect(String(proposal.body.reason)).toContain("waiting for approval");
    expect(pending()).toHaveLength(MAX_PENDING_GATES);

    const [oldest] = pending();
    if (!oldest) throw new Error("no pending gate");
    await denyGate(env.paths, oldest, { by: "test" });
    const after = await callTool(101, "issues_create", { n: 101 });
    expect(after.result?.content?.[0]?.text).toMatch(/held for human approval/);
    expect(pending()).toHaveLength(MAX_PENDING_GATES);
  });
});
