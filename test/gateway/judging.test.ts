import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import { HttpsProxyAgent } from "https-proxy-agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import type { DecisionRecord } from "../../runner/boundary/gateway/audit/audit.ts";
import { revokeToken } from "../../runner/boundary/gateway/doors/identity.ts";
import { policyCheck } from "../../runner/boundary/gateway/policy/check.ts";
import { whatTheLineSays } from "../../runner/boundary/gateway/policy/replay-record.ts";
import { askHealth } from "../../runner/boundary/gateway/process/health.ts";
import { loadConfig } from "../../runner/ground/config/load.ts";
import { historyDir } from "../../runner/records/config-history/history.ts";
import { waitForDecision } from "../support/audit.ts";
import { type GatewayEnv, proxyUrlFor, startGatewayEnv } from "../support/gateway-env.ts";
import { curl, viaProxy } from "../support/proxy-clients.ts";
import { Upstream } from "../support/upstream.ts";

let api: Upstream;
let plain: Upstream;
let env: GatewayEnv;
let caFile: string;
let token: string;

const decisions = () =>
  readFileSync(join(env.paths.audit, "decisions.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map(
      (line) => JSON.parse(line) as Record<string, unknown> & { request: Record<string, unknown> },
    );

function orgToml(extra = ""): string {
  return `
[gateway]
upstream_ca = ["${join(env?.root ?? "", "upstream-ca.pem")}"]
resolve = { "api.test" = "127.0.0.1", "plain.test" = "127.0.0.1", "tunnel.test" = "127.0.0.1", "private.test" = "10.255.255.1" }

[[grant]]
name = "api-no-secrets"
verdict = "deny"
match = { host = "api.test", pathPrefix = "/secrets" }

[[grant]]
name = "api-read"
verdict = "allow"
match = { host = "api.test", method = ["GET"] }
inject = { credential = "apikey", headers = [{ header = "authorization", value = "Bearer {token}" }, { header = "x-basic", value = "Basic {b64:{user}:{token}}" }] }

[[grant]]
name = "plain"
verdict = "allow"
match = { host = "plain.test", protocol = "http" }

[[grant]]
name = "raw"
verdict = "tunnel"
match = { host = "tunnel.test" }

[[grant]]
name = "anything-public"
verdict = "allow"
match = { host = "*", pathPrefix = "/public" }
${extra}`;
}

beforeAll(async () => {
  api = await Upstream.start({ tls: true, names: ["api.test", "tunnel.test", "127.0.0.1"] });
  plain = await Upstream.start({ tls: false });
  env = await startGatewayEnv("");
  caFile = join(env.root, "upstream-ca.pem");
  await writeFile(caFile, api.certificate?.caPem ?? "");
  await env.writeOrg(orgToml());
  await env.restart(); // upstream CAs are read at start
  await env.writeVault("apikey", { token: "REAL-SECRET-123", user: "svc" });
  token = await env.token("elf", "run-judging-1");
});
afterAll(async () => {
  await env?.cleanup();
  await api?.stop();
  await plain?.stop();
});

const boxCa = () => readFileSync(join(env.paths.ca, "ca.crt"), "utf8");

describe("the gateway judges every request", () => {
  it("lets an allowed host through TLS interception and swaps the sentinel for the vault value", async () => {
    const response = await viaProxy(
      proxyUrlFor(env, token),
      `https://api.test:${api.port}/v1/items?q=1`,
      {
        ca: boxCa(),
        headers: { authorization: "Bearer roster-sentinel", "x-trace": "t1" },
      },
    );
    expect(response.status).toBe(200);
    const seen = api.seen.at(-1);
    expect(seen?.headers.authorization).toBe("Bearer REAL-SECRET-123");
    expect(seen?.headers["x-basic"]).toBe(
      `Basic ${Buffer.from("svc:REAL-SECRET-123").toString("base64")}`,
    );
    expect(seen?.headers["proxy-authorization"]).toBeUndefined();
    expect(seen?.headers["x-trace"]).toBe("t1");
    expect(JSON.stringify(api.seen)).not.toContain("roster-sentinel");

    const line = decisions().at(-1);
    expect(line).toMatchObject({
      verdict: "allow",
      rule: "api-read",
      subject: "org/elf",
      run_id: "run-judging-1",
      injected: ["authorization", "x-basic"],
      request: { method: "GET", host: "api.test", path: "/v1/items", query: "q=1" },
    });
    expect(JSON.stringify(line)).not.toContain("REAL-SECRET");
    expect(line?.request.headers).toMatchObject({ authorization: "<redacted>" });
  });

  it("refuses legibly: 403, the verdict header, the rule, and a hint naming the method rule", async () => {
    const denied = await viaProxy(
      proxyUrlFor(env, token),
      `https://api.test:${api.port}/v1/items`,
      {
        ca: boxCa(),
        method: "DELETE",
      },
    );
    expect(denied.status).toBe(403);
    expect(denied.headers["x-roster-verdict"]).toBe("deny");
    const body = JSON.parse(denied.body) as { error: string; rule: string | null; hint: string };
    expect(body.rule).toBeNull();
    expect(body.hint).toContain(
      'DELETE api.test is blocked by method, not host: "api-read" allows GET',
    );

    const byRule = await viaProxy(
      proxyUrlFor(env, token),
      `https://api.test:${api.port}/v1/../secrets/key`,
      {
        ca: boxCa(),
      },
    );
    expect(byRule.status).toBe(403);
    expect(byRule.headers["x-roster-rule"]).toBe("api-no-secrets");

    const encoded = await viaProxy(
      proxyUrlFor(env, token),
      `https://api.test:${api.port}/v1/%2e%2e/secrets`,
      {
        ca: boxCa(),
      },
    );
    expect(encoded.status).toBe(403);
    expect(encoded.headers["x-roster-rule"]).toBe("api-no-secrets");
  });

  it("denies an unknown, a missing and a revoked token", async () => {
    const url = `https://api.test:${api.port}/v1/items`;
    const unknown = await viaProxy(proxyUrlFor(env, "00000000-0000-4000-8000-000000000000"), url, {
      ca: boxCa(),
    });
    expect(unknown.status).toBe(403);
    const missing = await viaProxy(proxyUrlFor(env, undefined), url, { ca: boxCa() });
    expect(missing.status).toBe(403);
    const shortLived = await env.token("elf");
    expect((await viaProxy(proxyUrlFor(env, shortLived), url, { ca: boxCa() })).status).toBe(200);
    await revokeToken(env.paths.identity, shortLived);
    expect((await viaProxy(proxyUrlFor(env, shortLived), url, { ca: boxCa() })).status).toBe(403);
    const lines = decisions().slice(-4);
    expect(lines.map((line) => line.subject)).toEqual([null, null, "org/elf", null]);
  });

  it("parses plain HTTP inside a CONNECT tunnel and judges absolute-form http:// requests", async () => {
    const tunnelled = await viaProxy(
      proxyUrlFor(env, token),
      `http://plain.test:${plain.port}/inside`,
    );
    expect(tunnelled.status).toBe(200);
    expect(plain.seen.at(-1)?.url).toBe("/inside");
    expect(decisions().at(-1)).toMatchObject({
      rule: "plain",
      request: { protocol: "http", port: plain.port },
    });

    const absolute = await curl([
      "-x",
      proxyUrlFor(env, token),
      `http://plain.test:${plain.port}/absolute`,
    ]);
    expect(absolute.status).toBe(200);
    expect(plain.seen.at(-1)?.url).toBe("/absolute");

    const refused = await curl([
      "-x",
      proxyUrlFor(env, token),
      `http://nowhere.test:${plain.port}/x`,
    ]);
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body)).toMatchObject({ error: "denied by gateway (deny)" });
  });

  it("pipes raw bytes for a tunnel verdict, judged on host and port only", async () => {
    const proxy = new URL(proxyUrlFor(env, token));
    const auth = Buffer.from(`${token}:x`).toString("base64");
    const { Socket } = await import("node:net");
    const raw = new Socket();
    await new Promise<void>((resolve) => raw.connect(Number(proxy.port), "127.0.0.1", resolve));
    raw.write(
      `CONNECT tunnel.test:${api.port} HTTP/1.1\r\nHost: tunnel.test:${api.port}\r\nProxy-Authorization: Basic ${auth}\r\n\r\n`,
    );
    await new Promise<void>((resolve) => raw.once("data", () => resolve()));
    // the upstream's own certificate arrives untouched: verified against the upstream's CA, not roster's
    const secure = tlsConnect({
      socket: raw,
      servername: "tunnel.test",
      ca: api.certificate?.caPem,
    });
    await new Promise<void>((resolve, reject) => {
      secure.once("secureConnect", resolve);
      secure.once("error", reject);
    });
    secure.write(`GET /through-tunnel HTTP/1.1\r\nHost: tunnel.test\r\nConnection: close\r\n\r\n`);
    const reply = await new Promise<string>((resolve) => {
      let text = "";
      secure.on("data", (chunk: Buffer) => {
        text += chunk.toString();
      });
      secure.on("end", () => resolve(text));
    });
    expect(reply).toMatch(/^HTTP\/1.1 200/);
    expect(api.seen.at(-1)?.url).toBe("/through-tunnel");
    // the tunnel's line is written when it closes, with what reached the box
    const line = await waitForDecision(
      env.paths.audit,
      (record) => record.rule === "raw" && record.request.method === "CONNECT",
    );
    expect(line).toMatchObject({ verdict: "tunnel", outcome: "complete" });
    expect(line.bytes).toBeGreaterThan(reply.length);
  });

  it("refuses loopback, metadata and private addresses unless a grant names that exact host", async () => {
    const viaStar = await viaProxy(
      proxyUrlFor(env, token),
      `https://127.0.0.1:${api.port}/public/x`,
      { ca: boxCa() },
    );
    expect(viaStar.status).toBe(403);
    expect(viaStar.body).toContain("loopback");
    const metadata = await curl([
      "-x",
      proxyUrlFor(env, token),
      "http://169.254.169.254/public/latest/meta-data",
    ]);
    expect(metadata.status).toBe(403);
    expect(metadata.body).toContain("cloud metadata");
    const privateName = await viaProxy(proxyUrlFor(env, token), "https://private.test/public/", {
      ca: boxCa(),
    });
    expect(privateName.status).toBe(403);
    expect(privateName.body).toContain("private.test resolves to 10.255.255.1");

    // api.test resolves to loopback too, but its grant names it exactly: allowed (seen above)
    await env.writeOrg(
      orgToml(`
[[grant]]
name = "loopback-by-address"
verdict = "allow"
match = { host = "127.0.0.1" }
`),
    );
    const named = await viaProxy(
      proxyUrlFor(env, token),
      `https://127.0.0.1:${api.port}/by-address`,
      { ca: boxCa() },
    );
    expect(named.status).toBe(200);
    await env.writeOrg(orgToml());
  });

  it("injects nothing and answers 503 when the credential is missing", async () => {
    await env.writeOrg(orgToml().replace('credential = "apikey"', 'credential = "absent"'));
    const response = await viaProxy(proxyUrlFor(env, token), `https://api.test:${api.port}/v1/x`, {
      ca: boxCa(),
      headers: { authorization: "Bearer roster-sentinel" },
    });
    expect(response.status).toBe(503);
    expect(response.headers["x-roster-verdict"]).toBe("credential-outage");
    expect(api.seen.every((seen) => seen.url !== "/v1/x")).toBe(true);
    await env.writeOrg(orgToml());
  });

  it("re-reads config when it changes; a broken edit is refused and the last good config keeps judging", async () => {
    const url = `https://api.test:${api.port}/v1/items`;
    expect((await viaProxy(proxyUrlFor(env, token), url, { ca: boxCa() })).status).toBe(200);
    // refused, not taken: a half-saved file or a typo must not shut every box's door
    await env.writeOrg(
      `${orgToml()}\n[[grant]]\nname = "bad"\nverdict = "allow"\nmatch = { host = "a*b.test" }\n`,
    );
    const kept = await viaProxy(proxyUrlFor(env, token), url, { ca: boxCa() });
    expect(kept.status).toBe(200);
    const health = await askHealth(env.gateway.port, 2_000);
    expect(health?.config?.refused?.problems).toEqual([
      expect.stringMatching(
        /org\.toml:\d+: grant\.5\.match\.host: "a\*b\.test": a wildcard may only be/,
      ),
    ]);
    // a new grant is taken once the config is good again
    await env.writeOrg(orgToml().replace('pathPrefix = "/secrets"', 'pathPrefix = "/v1/items"'));
    expect((await viaProxy(proxyUrlFor(env, token), url, { ca: boxCa() })).status).toBe(403);
    expect((await askHealth(env.gateway.port, 2_000))?.config?.refused).toBeUndefined();
    await env.writeOrg(orgToml());
    expect((await viaProxy(proxyUrlFor(env, token), url, { ca: boxCa() })).status).toBe(200);
  });

  it("hands actions.roster.internal to the action host, never upstream", async () => {
    const response = await viaProxy(
      proxyUrlFor(env, token),
      "https://actions.roster.internal/no-such-endpoint",
      {
        ca: boxCa(),
        method: "POST",
        body: "{}",
        headers: { "content-type": "application/json" },
      },
    );
    expect(response.status).toBe(404);
    expect(JSON.parse(response.body)).toEqual({
      status: "error",
      error: "unknown action endpoint",
    });
  });

  it("judges a WebSocket handshake, then pipes frames both ways", async () => {
    const wss = new WebSocketServer({ server: api.server });
    wss.on("connection", (socket, request) => {
      socket.send(`auth=${request.headers.authorization}`);
      socket.on("message", (data) => socket.send(`echo:${data.toString()}`));
    });
    const agent = new HttpsProxyAgent(proxyUrlFor(env, token));
    const client = new WebSocket(`wss://api.test:${api.port}/ws`, { agent, ca: boxCa() });
    const messages: string[] = [];
    await new Promise<void>((resolve, reject) => {
      client.on("message", (data) => {
        messages.push(data.toString());
        if (messages.length === 1) client.send("ping");
        if (messages.length === 2) resolve();
      });
      client.on("error", reject);
    });
    client.close();
    wss.close();
    expect(messages).toEqual(["auth=Bearer REAL-SECRET-123", "echo:ping"]);
    const line = await waitForDecision(
      env.paths.audit,
      (record) => record.status === 101 && record.request.path === "/ws",
    );
    expect(line).toMatchObject({ rule: "api-read", outcome: "complete" });
  });
});

describe("roster policy check, asked what the door decided", () => {
  // last in the file: every request above has its line by now
  it("agrees with the door on every request this suite sent, under the config that judged it", () => {
    const agreed: string[] = [];
    for (const line of decisions() as unknown as DecisionRecord[]) {
      const says = whatTheLineSays(line);
      // the policy's own decisions: not the door's caps, the action host, or a tunnel's insides
      if (says.kind !== "decided" || !["allow", "deny", "gate"].includes(says.decided.verdict))
        continue;
      if (!line.config || line.subject !== "org/elf") continue;
      const { request } = line;
      const config = loadConfig(join(historyDir(env.paths.data), line.config));
      const headers = Object.fromEntries(
        Object.entries(request.headers).filter(([, value]) => value !== "<redacted>"),
      );
      const url = `${request.protocol}://${request.host}:${request.port}${request.path}${request.query ? `?${request.query}` : ""}`;
      const verdict = policyCheck(config, {
        worker: "elf",
        method: request.method,
        url,
        headers,
        ...(line.origins?.[0] ? { channel: line.origins[0] } : {}),
      });
      const asked = `${request.method} ${url}`;
      expect({ asked, verdict: verdict.verdict, rule: verdict.rule ?? null }).toEqual({
        asked,
        verdict: says.decided.verdict,
        rule: says.decided.rule,
      });
      agreed.push(asked);
    }
    console.log(`policy check agreed with the door on ${agreed.length} requests`);
    // the suite's allows, denials by a rule and denials by no rule were all asked
    expect(agreed.length).toBeGreaterThan(10);
  });
});
