import { readFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DecisionRecord } from "../../runner/boundary/gateway/audit/audit.ts";
import { AUDIT_FIELD_CHARS, AUDIT_HEADERS } from "../../runner/boundary/gateway/audit/cuts.ts";
import { type GatewayEnv, startGatewayEnv } from "../support/gateway-env.ts";

/**
 * An audit line holds what the box chose only up to stated lengths: a loop
 * of refused requests with a 1 MiB tool name, a path as long as the header
 * limit allows, or hundreds of headers writes small lines on the host's disk
 * that still name the start of what was sent, and say how much was cut.
 */
let env: GatewayEnv;
let token: string;

beforeAll(async () => {
  env = await startGatewayEnv(`
[gateway]
resolve = { "mcp.test" = "127.0.0.1" }

[[grant]]
name = "echo-only"
verdict = "allow"
match = { host = "mcp.test", mcp = { tool = "echo" } }
`);
  token = await env.token("elf", "run-cuts");
});
afterAll(async () => {
  await env?.cleanup();
});

/** One absolute-form request through the gateway; resolves to its status. */
function send(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const ask = request(
      {
        host: "127.0.0.1",
        port: env.gateway.port,
        method,
        path: `http://mcp.test:9${path}`,
        headers: {
          host: "mcp.test:9",
          "proxy-authorization": `Basic ${Buffer.from(`${token}:x`).toString("base64")}`,
          ...(body === undefined ? {} : { "content-length": String(Buffer.byteLength(body)) }),
          ...headers,
        },
        agent: false,
      },
      (response) => {
        response.resume();
        response.on("end", () => resolve(response.statusCode ?? 0));
      },
    );
    ask.on("error", reject);
    ask.end(body);
  });
}

/** The audit file's last line, raw and parsed. */
function lastLine(): { raw: string; line: DecisionRecord } {
  const lines = readFileSync(join(env.paths.audit, "decisions.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean);
  const raw = lines.at(-1) ?? "";
  return { raw, line: JSON.parse(raw) as DecisionRecord };
}

describe("audit lines, cut to stated lengths", () => {
  it("a refused call with a 1 MiB tool name writes a line of a few KiB that names the tool's start", async () => {
    const tool = `drop_${"t".repeat(1024 * 1024)}`;
    const body = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: tool, arguments: {} },
    });
    for (let i = 0; i < 3; i++) {
      const status = await send("POST", "/mcp", { "content-type": "application/json" }, body);
      expect(status).toBe(200); // refused, as a JSON-RPC error
      const { raw, line } = lastLine();
      expect(line).toMatchObject({ verdict: "deny", run_id: "run-cuts" });
      expect(raw.length).toBeLessThan(4096);
      expect(line.request.mcp?.tool).toMatch(/^drop_t+…\[\d+ more characters cut\]$/);
      expect(line.request.mcp?.tool?.startsWith(tool.slice(0, AUDIT_FIELD_CHARS))).toBe(true);
    }
  });

  it("a path and query as long as the header limit allows, and 200 headers, are cut too", async () => {
    const path = `/${"p".repeat(20_000)}?${"q".repeat(8_000)}`;
    expect(await send("GET", path, {})).toBe(403);
    const { raw, line } = lastLine();
    expect(raw.length).toBeLessThan(4096);
    expect(line.request.path).toMatch(/^\/p+…\[19489 more characters cut\]$/);
    expect(line.request.query).toMatch(/^q+…\[7488 more characters cut\]$/);

    const many: Record<string, string> = {};
    for (let i = 0; i < 200; i++) many[`x-made-up-${i}`] = "v".repeat(100);
    expect(await send("GET", "/", many)).toBe(403);
    const crowded = lastLine();
    expect(crowded.raw.length).toBeLessThan(16 * 1024);
    expect(Object.keys(crowded.line.request.headers)).toHaveLength(AUDIT_HEADERS + 1);
    expect(crowded.line.request.headers["…"]).toMatch(/^\d+ more headers cut$/);
  });
});
