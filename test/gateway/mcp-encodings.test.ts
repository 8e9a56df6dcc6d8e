import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { HttpsProxyAgent } from "https-proxy-agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import type { DecisionRecord } from "../../runner/boundary/gateway/audit/audit.ts";
import { waitForDecision } from "../support/audit.ts";
import { type GatewayEnv, proxyUrlFor, startGatewayEnv } from "../support/gateway-env.ts";
import { McpReaders } from "../support/mcp-readers.ts";
import { viaProxy } from "../support/proxy-clients.ts";

/**
 * The gateway judges an MCP message as its server will read it, or refuses:
 * the README's pattern (deny `delete_*`, gate `*_create`, the rest of the host
 * allowed with the token injected, a meter on one tool) on a real SDK server,
 * and a box that writes the same `tools/call` every way a server still runs.
 * Each is refused, held or metered exactly as the plain request is, and its
 * audit line names the tool; what the gateway can't read is never forwarded.
 */
const SECRET = "REAL-MCP-TOKEN-42";
let readers: McpReaders;
let env: GatewayEnv;
let dir: string;
let proxy: string;
let ca: string;

const orgToml = (caFile: string) => `
[gateway]
resolve = { "mcp.test" = "127.0.0.1", "ws.test" = "127.0.0.1", "any.test" = "127.0.0.1" }
upstream_ca = ["${caFile}"]

[[grant]]
name = "mcp-no-delete"
verdict = "deny"
match = { host = "mcp.test", mcp = { tool = "delete_*" } }

[[grant]]
name = "mcp-hold-writes"
verdict = "gate"
match = { host = "mcp.test", mcp = { tool = "*_create" } }
inject = { credential = "mcp", headers = [{ header = "authorization", value = "Bearer {token}" }] }

[[grant]]
name = "mcp-rest"
verdict = "allow"
match = { host = "mcp.test" }
inject = { credential = "mcp", headers = [{ header = "authorization", value = "Bearer {token}" }] }

[[grant]]
name = "no-delete-anywhere"
verdict = "deny"
match = { mcp = { tool = "delete_*" } }

[[grant]]
name = "any-host"
verdict = "allow"
match = { host = "any.test" }
inject = { credential = "mcp", headers = [{ header = "authorization", value = "Bearer {token}" }] }

[[grant]]
name = "ws-explicit"
verdict = "allow"
match = { host = "ws.test", headerContains = { upgrade = "websocket" } }

[[grant]]
name = "ws-tools"
verdict = "allow"
match = { host = "ws.test", mcp = { method = "*" } }

[budget]
currencies = ["calls"]

[[budget.meter]]
match = { host = "mcp.test", mcp = { tool = "issues_list" } }
spend = { calls = 1 }

[[budget.limit]]
currency = "calls"
window = "day"
max = 1000
`;

beforeAll(async () => {
  readers = await McpReaders.start({
    names: ["mcp.test", "ws.test", "any.test"],
    token: SECRET,
  });
  dir = await mkdtemp(join(tmpdir(), "roster-mcp-enc-"));
  const caFile = join(dir, "mcp-ca.pem");
  await writeFile(caFile, readers.certificate.caPem);
  env = await startGatewayEnv(orgToml(caFile));
  await env.writeVault("mcp", { token: SECRET });
  proxy = proxyUrlFor(env, await env.token("elf", "run-enc-1"));
  ca = readFileSync(join(env.paths.ca, "ca.crt"), "utf8");
});
afterAll(async () => {
  await env?.cleanup();
  await readers?.stop();
  await rm(dir, { recursive: true, force: true });
});

const call = (tool: string) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id: 9,
    method: "tools/call",
    params: { name: tool, arguments: {} },
  });
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

interface Encoding {
  name: string;
  type: string;
  encoding?: string;
  bytes(text: string): Buffer;
}
const ENCODINGS: Encoding[] = [
  { name: "a capitalised media type", type: "Application/JSON", bytes: (t) => Buffer.from(t) },
  {
    name: "an upper-case one with a charset",
    type: "APPLICATION/JSON; charset=utf-8",
    bytes: (t) => Buffer.from(t),
  },
  {
    name: "a byte-order mark",
    type: "application/json",
    bytes: (t) => Buffer.concat([BOM, Buffer.from(t)]),
  },
  { name: "gzip", type: "application/json", encoding: "gzip", bytes: (t) => gzipSync(t) },
  { name: "a media type that isn't JSON", type: "text/plain", bytes: (t) => Buffer.from(t) },
];
const READERS = ["/sdk", "/inflating"];

/** Sends `body` as a box would; resolves to the answer and the request's audit line. */
async function send(
  path: string,
  headers: Record<string, string>,
  body: Buffer,
  host = "mcp.test",
) {
  const tag = randomUUID();
  const answer = await viaProxy(proxy, `https://${host}:${readers.port}${path}`, {
    ca,
    method: "POST",
    headers: { accept: "application/json, text/event-stream", "x-case": tag, ...headers },
    body,
  });
  const line = await waitForDecision(
    env.paths.audit,
    (record) => record.request.headers["x-case"] === tag,
  );
  return { answer, line };
}

const sent = (encoding: Encoding, path: string, tool: string) =>
  send(
    path,
    {
      "content-type": encoding.type,
      ...(encoding.encoding ? { "content-encoding": encoding.encoding } : {}),
    },
    encoding.bytes(call(tool)),
  );

describe("an MCP call the way a box may write it", () => {
  for (const path of READERS) {
    for (const encoding of ENCODINGS) {
      it(`${path}: ${encoding.name} — denied, held and metered as the plain call, the tool named`, async () => {
        const before = readers.ran();
        const denied = await sent(encoding, path, "delete_repo");
        expect(denied.line).toMatchObject({ verdict: "deny", rule: "mcp-no-delete", status: 403 });
        expect(denied.line.request.mcp).toEqual({ method: "tools/call", tool: "delete_repo" });
        expect(denied.answer.body).toContain(
          'delete_repo refused by the roster gateway (rule \\"mcp-no-delete\\")',
        );

        const held = await sent(encoding, path, "issues_create");
        expect(held.line).toMatchObject({ verdict: "gate", rule: "mcp-hold-writes" });
        expect(held.line.request.mcp?.tool).toBe("issues_create");
        expect(held.answer.body).toMatch(/held for human approval: proposal g-[0-9a-f]+/);
        // neither reached the server, with the token or without
        expect(readers.ran()).toBe(before);

        const metered = await sent(encoding, path, "issues_list");
        expect(metered.line.request.mcp?.tool).toBe("issues_list");
        expect(metered.line.spend).toEqual({ calls: 1 });
      });
    }
  }
});

describe("what the gateway can't read as the server would, on a host that speaks MCP", () => {
  const cases: Array<[string, Record<string, string>, Buffer, RegExp]> = [
    [
      "another charset",
      { "content-type": "application/json; charset=utf-16le" },
      Buffer.from(call("delete_repo"), "utf16le"),
      /charset "utf-16le"/,
    ],
    [
      "an encoding it doesn't read",
      { "content-type": "application/json", "content-encoding": "compress" },
      Buffer.from(call("delete_repo")),
      /Content-Encoding "compress"/,
    ],
    [
      "a key twice",
      { "content-type": "application/json" },
      Buffer.from(
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","name":"delete_repo"}}',
      ),
      /appears twice/,
    ],
    [
      "a body that isn't JSON",
      { "content-type": "application/x-www-form-urlencoded" },
      Buffer.from("method=tools/call&name=delete_repo"),
      /not JSON/,
    ],
  ];
  it.each(cases)("%s is refused and never forwarded", async (_name, headers, body, reason) => {
    const before = readers.ran();
    for (const path of READERS) {
      const { answer, line } = await send(path, headers, body);
      expect(answer.status).toBe(403);
      expect(JSON.parse(answer.body).hint).toMatch(reason);
      expect(line).toMatchObject({ verdict: "deny", status: 403 });
    }
    expect(readers.ran()).toBe(before);
  });

  it("refuses a WebSocket to it unless a grant allows the upgrade by name", async () => {
    const open = (host: string) =>
      new Promise<number>((resolve) => {
        const socket = new WebSocket(`wss://${host}:${readers.port}/ws`, {
          agent: new HttpsProxyAgent(proxy),
          ca,
          headers: { "x-case": host },
        });
        socket.on("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
        socket.on("upgrade", () => resolve(101));
        socket.on("error", () => resolve(0));
      });
    expect(await open("mcp.test")).toBe(403);
    const line: DecisionRecord = await waitForDecision(
      env.paths.audit,
      (record) => record.request.headers["x-case"] === "mcp.test",
    );
    expect(line).toMatchObject({ verdict: "deny", rule: "mcp-rest" });
    // ws.test's grant names the upgrade: judged and forwarded (the test server has no WebSocket)
    await open("ws.test");
    const allowed = await waitForDecision(
      env.paths.audit,
      (record) => record.request.headers["x-case"] === "ws.test",
    );
    expect(allowed).toMatchObject({ verdict: "allow", rule: "ws-explicit" });
  });
});

describe("a rule with `match.mcp` and no host, so any host may be an MCP server", () => {
  it("judges a call written any way on a host no rule names, and lets other JSON through", async () => {
    const before = readers.ran();
    const bom = Buffer.concat([BOM, Buffer.from(call("delete_repo"))]);
    const denied = await send("/sdk", { "content-type": "Application/JSON" }, bom, "any.test");
    expect(denied.line).toMatchObject({ verdict: "deny", rule: "no-delete-anywhere" });
    expect(denied.line.request.mcp?.tool).toBe("delete_repo");
    const utf16 = Buffer.from(call("delete_repo"), "utf16le");
    const unread = await send(
      "/inflating",
      { "content-type": "application/json; charset=utf-16le" },
      utf16,
      "any.test",
    );
    expect(unread.answer.status).toBe(403);
    expect(JSON.parse(unread.answer.body).hint).toMatch(/an MCP rule with no host/);
    expect(readers.ran()).toBe(before);
    // JSON that is no JSON-RPC message (a model call, a REST API) goes on as before
    const other = await send(
      "/inflating",
      { "content-type": "application/json" },
      Buffer.from('{"model":"m"}'),
      "any.test",
    );
    expect(other.line).toMatchObject({ verdict: "allow", rule: "any-host" });
    expect(other.line.request.mcp).toBeNull();
  });
});
