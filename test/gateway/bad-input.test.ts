import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readDecisions } from "../../runner/boundary/gateway/audit/view.ts";
import { UNREAD_RULE } from "../../runner/boundary/gateway/exchange/server.ts";
import { loadConfig } from "../../runner/ground/config/load.ts";
import { type GatewayEnv, proxyUrlFor, startGatewayEnv } from "../support/gateway-env.ts";
import { rawExchange, viaProxy } from "../support/proxy-clients.ts";
import { Upstream } from "../support/upstream.ts";

let env: GatewayEnv;
let silent: Upstream;
let token: string;
let auth: string;

beforeAll(async () => {
  // an upstream that accepts requests and never answers
  silent = await Upstream.start({ tls: false, handler: () => new Promise(() => undefined) });
  env = await startGatewayEnv(
    `
[gateway]
resolve = { "silent.test" = "127.0.0.1" }

[[grant]]
name = "silent"
verdict = "allow"
match = { host = "silent.test" }
`,
    { timeouts: { requestMs: 1500, headersMs: 1000, idleMs: 2000, upstreamHeadersMs: 1500 } },
  );
  token = await env.token("elf");
  auth = `Proxy-Authorization: Basic ${Buffer.from(`${token}:x`).toString("base64")}\r\n`;
});
afterAll(async () => {
  await env?.cleanup();
  await silent?.stop();
});

describe("bad input gets a legible answer, never a hang or a bare reset", () => {
  it.each([["no-port"], ["host:99999"], ["[::1:443"], ["a b:443"]])(
    "a malformed CONNECT target %j → 400",
    async (target) => {
      const reply = await rawExchange(env.gateway.port, [
        `CONNECT ${target} HTTP/1.1\r\nHost: x\r\n${auth}\r\n`,
      ]);
      expect(reply.text).toMatch(/^HTTP\/1.1 400/);
      expect(reply.text).toMatch(/"error":"(malformed CONNECT target|malformed HTTP request)/);
    },
  );

  it("oversized headers → 431", async () => {
    const reply = await rawExchange(env.gateway.port, [
      `GET http://silent.test/ HTTP/1.1\r\nHost: silent.test\r\nX-Big: ${"a".repeat(40_000)}\r\n\r\n`,
    ]);
    expect(reply.text).toMatch(/^HTTP\/1.1 431/);
  });

  it("garbage instead of a TLS hello inside a tunnel → 400, connection closed", async () => {
    const reply = await rawExchange(env.gateway.port, [
      `CONNECT silent.test:443 HTTP/1.1\r\nHost: silent.test:443\r\n${auth}\r\n`,
      Buffer.from([0x00, 0xff, 0x13, 0x37, 0x0d, 0x0a, 0x0d, 0x0a]),
    ]);
    expect(reply.text).toContain("HTTP/1.1 200 Connection Established");
    expect(reply.text).toMatch(/HTTP\/1.1 400 Bad Request/);
    expect(reply.closed).toBe(true);
  });

  it("a client that stalls mid-request is answered 408 and its socket freed", async () => {
    const started = Date.now();
    const reply = await rawExchange(
      env.gateway.port,
      [
        `POST http://silent.test/ HTTP/1.1\r\nHost: silent.test\r\n${auth}Content-Length: 100\r\n\r\nonly-part`,
      ],
      8000,
    );
    expect(reply.closed).toBe(true);
    expect(reply.text).toMatch(/^HTTP\/1.1 408/);
    expect(Date.now() - started).toBeLessThan(7000);
  });

  it("an upstream that never answers → 504 after the upstream timeout", async () => {
    const response = await viaProxy(proxyUrlFor(env, token), `http://silent.test:${silent.port}/`);
    expect(response.status).toBe(504);
    expect(JSON.parse(response.body)).toMatchObject({
      error: "upstream: no answer in time",
      rule: "silent",
    });
  });

  it("each of those refusals is in the audit log, under the token that sent it when it had one", async () => {
    const notProxy = await rawExchange(env.gateway.port, [
      `GET /relative HTTP/1.1\r\nHost: x\r\n${auth}\r\n`,
    ]);
    expect(notProxy.text).toMatch(/^HTTP\/1.1 400/);
    const unread = readDecisions(env.paths.audit).filter((line) => line.rule === UNREAD_RULE);
    const statuses = unread.map((line) => line.status);
    // the four malformed CONNECT targets, the oversized headers, the garbage in a tunnel,
    // the stalled request and the request that was no proxy request
    expect(statuses.filter((status) => status === 400).length).toBeGreaterThanOrEqual(6);
    expect(statuses).toContain(431);
    expect(statuses).toContain(408);
    expect(unread.find((line) => line.note === "not a proxy request")).toMatchObject({
      verdict: "deny",
      subject: "org/elf",
    });
  });

  it("a grant with an invalid host pattern is a config error naming file, line and field", async () => {
    const root = join(env.root, "other-config");
    await mkdir(join(root, "workers/elf"), { recursive: true });
    await writeFile(
      join(root, "workers/elf/worker.toml"),
      'name = "elf"\n\n[[grant]]\nname = "ok"\nverdict = "deny"\nmatch = { host = "fine.test" }\n\n[[grant]]\nname = "bad"\nverdict = "deny"\n[grant.match]\nmethod = "GET"\nhost = "http://evil.test/"\n',
    );
    await writeFile(
      join(root, "org.toml"),
      '[[grant]]\nname = "x"\nverdict = "maybe"\nsurprise = 1\n',
    );
    const errors = loadConfig(root).errors.map(
      (error) =>
        `${error.file.slice(root.length + 1)}:${error.line}: ${error.field}: ${error.message}`,
    );
    expect(errors).toEqual(
      expect.arrayContaining([
        'org.toml:3: grant.0.verdict: must be one of allow, deny, tunnel, gate (found "maybe")',
        "org.toml:4: grant.0.surprise: unknown key",
        'workers/elf/worker.toml:13: grant.1.match.host: "http://evil.test/": a host pattern has no port, scheme or path',
      ]),
    );
  });
});
