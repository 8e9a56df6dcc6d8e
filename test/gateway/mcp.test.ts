import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readJournal } from "../../runner/records/journal/journal.ts";
import { runRoster } from "../support/cli.ts";
import { type GatewayEnv, proxyUrlFor, startGatewayEnv } from "../support/gateway-env.ts";
import { connectMcp, type McpConnection, resultText } from "../support/mcp-clients.ts";
import { McpUpstream } from "../support/mcp-upstream.ts";
import { viaProxy } from "../support/proxy-clients.ts";
import { Upstream } from "../support/upstream.ts";

/**
 * The gateway governs MCP: a real MCP server (the official SDK, streamable
 * HTTP, bearer auth, TLS) reached by the SDK's own client through the proxy,
 * as a box reaches it. Grants pick tools by glob; the credential is injected
 * for that server only; a refusal reads as a JSON-RPC error naming the rule;
 * meters count tool calls; a gated tool waits on the desk and runs once.
 */
const SECRET = "REAL-MCP-TOKEN-77";
let mcp: McpUpstream;
let other: Upstream;
let env: GatewayEnv;
let conn: McpConnection;

const orgToml = (caFile: string) => `
[gateway]
resolve = { "mcp.test" = "127.0.0.1", "other.test" = "127.0.0.1" }
upstream_ca = ["${caFile}"]

[[grant]]
name = "mcp-no-delete"
verdict = "deny"
match = { host = "mcp.test", mcp = { tool = "delete_*" } }

[[grant]]
name = "mcp-hold-writes"
verdict = "gate"
match = { host = "mcp.test", mcp = { tool = ["*_create", "*_update"] } }
inject = { credential = "mcp", headers = [{ header = "authorization", value = "Bearer {token}" }] }

[[grant]]
name = "mcp-session"
verdict = "allow"
match = { host = "mcp.test", method = ["GET", "DELETE"] }
inject = { credential = "mcp", headers = [{ header = "authorization", value = "Bearer {token}" }] }

[[grant]]
name = "mcp-protocol"
verdict = "allow"
match = { host = "mcp.test", mcp = { method = ["initialize", "notifications/*", "tools/list"] } }
inject = { credential = "mcp", headers = [{ header = "authorization", value = "Bearer {token}" }] }

[[grant]]
name = "mcp-tools"
verdict = "allow"
match = { host = "mcp.test", mcp = { tool = ["echo", "issues_*"] } }
inject = { credential = "mcp", headers = [{ header = "authorization", value = "Bearer {token}" }] }

[[grant]]
name = "other"
verdict = "allow"
match = { host = "other.test" }

[budget]
currencies = ["calls"]

[[budget.meter]]
match = { mcp = { tool = "issues_list" } }
spend = { calls = 1 }

[[budget.limit]]
currency = "calls"
window = "day"
max = 2
`;

beforeAll(async () => {
  mcp = await McpUpstream.start({ names: ["mcp.test"], token: SECRET });
  other = await Upstream.start({ tls: false });
  env = await startGatewayEnv("");
  const caFile = join(env.root, "mcp-ca.pem");
  await writeFile(caFile, mcp.certificate.caPem);
  await env.writeOrg(orgToml(caFile));
  await env.restart(); // upstream CAs are read at start
  await env.writeVault("mcp", { token: SECRET });
  const token = await env.token("elf", "run-mcp-1");
  conn = await connectMcp(`https://mcp.test:${mcp.port}/mcp`, {
    proxy: proxyUrlFor(env, token),
    ca: readFileSync(join(env.paths.ca, "ca.crt"), "utf8"),
  });
});
afterAll(async () => {
  await conn?.close();
  await env?.cleanup();
  await mcp?.stop();
  await other?.stop();
});

interface Line {
  verdict: string;
  rule: string | null;
  status: number;
  note?: string;
  injected?: string[];
  outcome?: string;
  mcp_answer?: unknown;
  budget?: unknown;
  request?: { host: string; mcp: { method: string; tool?: string } | null };
}
const decisions = (): Line[] =>
  readFileSync(join(env.paths.audit, "decisions.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Line);
const lineFor = (tool: string) => decisions().filter((line) => line.request?.mcp?.tool === tool);

describe("MCP through the gateway", () => {
  it("lists the server's tools and calls an allowed one with the credential injected there only", async () => {
    const { tools } = await conn.client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual([
      "echo",
      "issues_list",
      "issues_create",
      "issues_close",
      "delete_repo",
    ]);
    const result = await conn.client.callTool({ name: "echo", arguments: { text: "hi" } });
    expect(resultText(result)).toContain('echo ran (call 1) with {"text":"hi"}');
    // the box sent no credential; every request the server saw carried the vault's
    expect(mcp.authorizations.length).toBeGreaterThan(0);
    expect(mcp.authorizations.every((value) => value === `Bearer ${SECRET}`)).toBe(true);
    // the same box reaching another host gets nothing injected
    const token = await env.token("elf", "run-mcp-1");
    await viaProxy(proxyUrlFor(env, token), `http://other.test:${other.port}/x`);
    expect(other.seen.at(-1)?.headers.authorization).toBeUndefined();

    expect(lineFor("echo").at(-1)).toMatchObject({
      verdict: "allow",
      rule: "mcp-tools",
      status: 200,
      injected: ["authorization"],
      request: { host: "mcp.test", mcp: { method: "tools/call", tool: "echo" } },
    });
    expect(readFileSync(join(env.paths.audit, "decisions.jsonl"), "utf8")).not.toContain(SECRET);
  });

  it("audits a forwarded call's JSON-RPC error from the server on its line", async () => {
    await expect(conn.client.callTool({ name: "issues_close", arguments: {} })).rejects.toThrow(
      /no such issue/,
    );
    expect(mcp.count("issues_close")).toBe(1);
    expect(lineFor("issues_close").at(-1)).toMatchObject({
      verdict: "allow",
      rule: "mcp-tools",
      status: 200,
      outcome: "complete",
      mcp_answer: { error: { message: "no such issue" } },
    });
    expect(lineFor("echo").at(-1)).not.toHaveProperty("mcp_answer");
  });

  it("refuses a denied tool with a JSON-RPC error the SDK raises, naming the rule and the hint", async () => {
    const refused = conn.client.callTool({ name: "delete_repo", arguments: { title: "prod" } });
    await expect(refused).rejects.toThrow(
      /delete_repo refused by the roster gateway \(rule "mcp-no-delete"\)/,
    );
    await expect(conn.client.callTool({ name: "delete_repo", arguments: {} })).rejects.toThrow(
      /hint: policy said no/,
    );
    expect(mcp.count("delete_repo")).toBe(0);
    expect(lineFor("delete_repo").at(-1)).toMatchObject({
      verdict: "deny",
      rule: "mcp-no-delete",
      status: 403,
      note: "answered as a JSON-RPC error (HTTP 200)",
    });
    // a tool no grant names: default deny, said the same way; the session goes on
    await expect(conn.client.callTool({ name: "admin_reset", arguments: {} })).rejects.toThrow(
      /admin_reset refused by the roster gateway \(no rule allows it\)/,
    );
    const again = await conn.client.callTool({ name: "echo", arguments: { text: "still here" } });
    expect(resultText(again)).toContain("still here");
    // a batch is still refused whole: judging one message and forwarding many would let the rest by
    const batch = await viaProxy(
      proxyUrlFor(env, await env.token("elf", "run-mcp-1")),
      `https://mcp.test:${mcp.port}/mcp`,
      {
        ca: readFileSync(join(env.paths.ca, "ca.crt"), "utf8"),
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body: JSON.stringify([
          { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "echo" } },
          { jsonrpc: "2.0", id: 8, method: "tools/call", params: { name: "delete_repo" } },
        ]),
      },
    );
    expect(batch.status).toBe(400);
    expect(JSON.parse(batch.body)).toMatchObject({ error: "JSON-RPC batch refused" });
    expect(mcp.count("delete_repo")).toBe(0);
  });

  it("meters tool calls by name: the limit refuses the next call legibly", async () => {
    const first = await conn.client.callTool({ name: "issues_list", arguments: {} });
    expect(resultText(first)).toContain("issues_list ran (call 1)");
    await conn.client.callTool({ name: "issues_list", arguments: {} });
    await expect(conn.client.callTool({ name: "issues_list", arguments: {} })).rejects.toThrow(
      /issues_list refused by the roster gateway \(rule "mcp-tools"\) — budget exceeded — calls over day cap \(2\.0000\/2\.0000\)/,
    );
    expect(mcp.count("issues_list")).toBe(2);
    // other tools are not metered
    await conn.client.callTool({ name: "echo", arguments: {} });
    expect(lineFor("issues_list").at(-1)).toMatchObject({
      verdict: "allow",
      status: 402,
      note: "budget; answered as a JSON-RPC error (HTTP 200)",
      budget: { detail: "calls over day cap (2.0000/2.0000)" },
    });
  });

  it("holds a gated tool on the desk, runs it once on approval, and journals the result", async () => {
    const held = await conn.client.callTool({
      name: "issues_create",
      arguments: { title: "Door is ajar", text: "found by elf" },
    });
    expect(held.isError).toBeFalsy();
    const text = resultText(held);
    expect(text).toMatch(/held for human approval: proposal g-[0-9a-f]+/);
    const gateId = /g-[0-9a-f]+/.exec(text)?.[0] ?? "";
    expect(mcp.count("issues_create")).toBe(0);
    expect(lineFor("issues_create").at(-1)).toMatchObject({
      verdict: "gate",
      rule: "mcp-hold-writes",
      note: `held as ${gateId}`,
    });

    const rootEnv = { ROSTER_ROOT: env.root };
    const listed = await runRoster(["approvals", "ls"], rootEnv);
    expect(listed.stdout).toContain(gateId);
    expect(listed.stdout).toMatch(
      /MCP mcp\.test:\d+ issues_create \{"title":"Door is ajar","text":"found by elf"\}/,
    );
    const shown = await runRoster(["approvals", "show", gateId], rootEnv);
    expect(shown.stdout).toContain('"name": "issues_create"');

    const approved = await runRoster(["approvals", "approve", gateId], rootEnv);
    expect(approved.stdout).toContain(`${gateId} executed`);
    expect(mcp.count("issues_create")).toBe(1);
    // a second approval is a no-op, never a second call
    await runRoster(["approvals", "approve", gateId], rootEnv);
    expect(mcp.count("issues_create")).toBe(1);

    const executed = readJournal(env.paths, "elf", 50).find(
      (event) => event.kind === "executed" && event.gate_id === gateId,
    );
    expect(JSON.stringify(executed?.detail)).toContain(
      'issues_create ran (call 1) with {\\"title\\":\\"Door is ajar\\",\\"text\\":\\"found by elf\\"}',
    );

    // a denied one is journaled and never runs
    const second = await conn.client.callTool({ name: "issues_update", arguments: { title: "x" } });
    const secondId = /g-[0-9a-f]+/.exec(resultText(second))?.[0] ?? "";
    await runRoster(["approvals", "deny", secondId, "not today"], rootEnv);
    expect(mcp.count("issues_update")).toBe(0);
    expect(
      readJournal(env.paths, "elf", 50).some(
        (event) => event.kind === "denied" && event.gate_id === secondId,
      ),
    ).toBe(true);
  });
});
