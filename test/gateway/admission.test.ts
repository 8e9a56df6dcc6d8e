import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ACTIONS_HOST } from "../../runner/boundary/gateway/exchange/action-host.ts";
import { waitForDecision } from "../support/audit.ts";
import { type GatewayEnv, startGatewayEnv } from "../support/gateway-env.ts";
import { rawExchange } from "../support/proxy-clients.ts";

/**
 * Every way into the gateway goes through one admission sequence, so every
 * refusal is audited — including those that once were not: a WebSocket
 * upgrade to the action host, and a request whose Host header fronts another
 * host than its tunnel's.
 */
let env: GatewayEnv;
let auth: string;

beforeAll(async () => {
  env = await startGatewayEnv(`
[[grant]]
name = "no-creates"
verdict = "deny"
match = { mcp = { tool = ["create_*"] } }

[[grant]]
name = "allowed"
verdict = "allow"
match = { host = "allowed.test" }
`);
  const token = await env.token("elf", "run-admission");
  auth = `Proxy-Authorization: Basic ${Buffer.from(`${token}:x`).toString("base64")}\r\n`;
});
afterAll(async () => {
  await env?.cleanup();
});

describe("one admission sequence", () => {
  it("audits a WebSocket upgrade to the action host it refuses", async () => {
    const reply = await rawExchange(env.gateway.port, [
      `GET http://${ACTIONS_HOST}/v1/actions HTTP/1.1\r\nHost: ${ACTIONS_HOST}\r\n${auth}Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
    ]);
    expect(reply.text).toMatch(/^HTTP\/1.1 403/);
    expect(reply.text).toContain("the action host speaks plain HTTPS, not WebSocket");
    const line = await waitForDecision(
      env.paths.audit,
      (record) => record.request.host === ACTIONS_HOST && record.status === 403,
    );
    expect(line).toMatchObject({ verdict: "deny", run_id: "run-admission" });
  });

  it("audits a request inside a tunnel whose Host header names another host", async () => {
    const reply = await rawExchange(env.gateway.port, [
      `CONNECT allowed.test:80 HTTP/1.1\r\nHost: allowed.test:80\r\n${auth}\r\n`,
      "GET / HTTP/1.1\r\nHost: Elsewhere.Test.\r\nConnection: close\r\n\r\n",
    ]);
    expect(reply.text).toContain("200 Connection Established");
    expect(reply.text).toContain("HTTP/1.1 403");
    expect(reply.text).toContain("the Host header (elsewhere.test) must name the host");
    const line = await waitForDecision(env.paths.audit, (record) => record.note === "fronting");
    expect(line).toMatchObject({ verdict: "deny", status: 403, run_id: "run-admission" });
    expect(line.request.host).toBe("allowed.test");
  });

  it("passes no upgrade but a WebSocket, and none where a host-less MCP rule reads every host", async () => {
    const upgrade = (protocol: string, method = "GET") =>
      rawExchange(env.gateway.port, [
        `${method} http://allowed.test/socket HTTP/1.1\r\nHost: allowed.test\r\n${auth}Connection: Upgrade\r\nUpgrade: ${protocol}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
      ]);
    const h2c = await upgrade("h2c");
    expect(h2c.text).toMatch(/^HTTP\/1.1 403/);
    expect(h2c.text).toContain(
      'the door passes only a WebSocket upgrade (GET, Upgrade: websocket), not \\"h2c\\"',
    );
    expect((await upgrade("websocket", "POST")).text).toMatch(/^HTTP\/1.1 403/);
    // "no-creates" names no host: any host may be an MCP server, so a WebSocket's unread
    // messages pass only where a grant allows the upgrade by name
    const ws = await upgrade("websocket");
    expect(ws.text).toMatch(/^HTTP\/1.1 403/);
    expect(ws.text).toContain("an MCP rule with no host reads every host");
    const lines = await waitForDecision(
      env.paths.audit,
      (record) =>
        record.request.path === "/socket" &&
        record.request.method === "GET" &&
        record.status === 403 &&
        record.request.headers.upgrade === "websocket",
    );
    expect(lines).toMatchObject({ verdict: "deny", rule: "allowed", run_id: "run-admission" });
  });
});
