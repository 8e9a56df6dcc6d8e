import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readTrip } from "../../runner/boundary/gateway/audit/tripwire.ts";
import { policyCheck } from "../../runner/boundary/gateway/policy/check.ts";
import { loadConfig } from "../../runner/ground/config/load.ts";
import { SENTINEL } from "../../runner/ground/config/sentinel.ts";
import { waitForDecision } from "../support/audit.ts";
import { type GatewayEnv, proxyUrlFor, startGatewayEnv } from "../support/gateway-env.ts";
import { rawExchange, viaProxy } from "../support/proxy-clients.ts";
import { Upstream } from "../support/upstream.ts";

/**
 * The sentinel tripwire at the door: a box's credential stand-in goes to a
 * host whose credential replaces it (GitHub here, a local HTTPS site under
 * its name) and is injected as ever; the same stand-in anywhere else — in a
 * header, the query, the path, a body, base64'd in Basic auth, on a
 * WebSocket upgrade, to a host the grants allow or to one they don't — is
 * refused as `sentinel-leak` before anything is sent. The run is marked in
 * its tripwire file, counted in the door's metrics, and `roster policy
 * check` says the same. The model's endpoint, where pi's key is the
 * sentinel, is not the tripwire's, key or no key.
 */
let site: Upstream;
let env: GatewayEnv;
let token: string;
const RUN = "run-sentinel-1";
const REAL = "REAL-GITHUB-TOKEN-7";
const basic = (secret: string) =>
  `Basic ${Buffer.from(`x-access-token:${secret}`).toString("base64")}`;

const orgToml = (caFile: string) => `
[model]
provider = "openai-compatible"
model = "scripted-1"
base_url = "https://model.test:${site.port}/v1"

[gateway]
upstream_ca = ["${caFile}"]
resolve = { "api.github.com" = "127.0.0.1", "elsewhere.test" = "127.0.0.1", "model.test" = "127.0.0.1" }

[telemetry]
metrics_listen = "127.0.0.1:9"

[[grant]]
name = "github"
verdict = "allow"
match = { host = "api.github.com" }
inject = { credential = "github", headers = [{ header = "authorization", value = "Basic {b64:x-access-token:{token}}" }] }

[[grant]]
name = "elsewhere"
verdict = "allow"
match = { host = "elsewhere.test" }
`;

beforeAll(async () => {
  site = await Upstream.start({
    tls: true,
    names: ["api.github.com", "elsewhere.test", "model.test"],
  });
  env = await startGatewayEnv("");
  const caFile = join(env.root, "site-ca.pem");
  await writeFile(caFile, site.certificate?.caPem ?? "");
  await env.writeOrg(orgToml(caFile));
  await env.restart(); // upstream CAs and telemetry are read at start
  await env.writeVault("github", { token: REAL });
  await mkdir(join(env.paths.config, "workers", "elf"), { recursive: true });
  await writeFile(join(env.paths.config, "workers", "elf", "worker.toml"), 'name = "elf"\n');
  token = await env.token("elf", RUN);
});
afterAll(async () => {
  await env?.cleanup();
  await site?.stop();
});

const ca = () => readFileSync(join(env.paths.ca, "ca.crt"), "utf8");
const send = (url: string, options: Parameters<typeof viaProxy>[2] = {}) =>
  viaProxy(proxyUrlFor(env, token), url, { ca: ca(), ...options });
const seenWith = (needle: string) =>
  site.seen.filter((one) => JSON.stringify(one).includes(needle)).length;

describe("the sentinel tripwire", () => {
  it("injects GitHub's credential in place of the sentinel, as before", async () => {
    const reply = await send(`https://api.github.com:${site.port}/user`, {
      headers: { authorization: basic(SENTINEL) },
    });
    expect(reply.status).toBe(200);
    expect(site.seen.at(-1)?.headers.authorization).toBe(basic(REAL));
    expect(seenWith(SENTINEL)).toBe(0);
    const line = await waitForDecision(env.paths.audit, (one) => one.request.path === "/user");
    expect(line).toMatchObject({ verdict: "allow", rule: "github", injected: ["authorization"] });
    expect(readTrip(env.paths.audit, RUN)).toBeUndefined();
  });

  it("refuses the sentinel to any other host, wherever it sits, and sends nothing", async () => {
    const before = site.seen.length;
    const elsewhere = `https://elsewhere.test:${site.port}`;
    const tries: Array<[string, Parameters<typeof viaProxy>[2]]> = [
      ["/h", { headers: { authorization: `Bearer ${SENTINEL}` } }],
      ["/basic", { headers: { authorization: basic(SENTINEL) } }],
      ["/custom", { headers: { "x-token": SENTINEL } }],
      [`/q?token=${SENTINEL}`, {}],
      [`/q2?token=${SENTINEL.replace("r", "%72")}`, {}],
      [`/p/${SENTINEL}`, {}],
      [
        "/body",
        {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ note: `here: ${SENTINEL}` }),
        },
      ],
    ];
    for (const [path, options] of tries) {
      const reply = await send(`${elsewhere}${path}`, options);
      expect(reply.status, path).toBe(403);
      expect(reply.headers["x-roster-rule"], path).toBe("sentinel-leak");
      expect(JSON.parse(reply.body)).toMatchObject({
        error: "denied by gateway (sentinel-leak)",
        rule: "sentinel-leak",
      });
    }
    // a host no grant allows is refused as the tripwire, not as a default deny
    const ungranted = await send(`https://nowhere.test:${site.port}/`, {
      headers: { "x-token": SENTINEL },
    });
    expect(ungranted.headers["x-roster-rule"]).toBe("sentinel-leak");
    expect(site.seen.length).toBe(before);

    // the same request without it goes through
    expect((await send(`${elsewhere}/clean`, { headers: { "x-token": "t" } })).status).toBe(200);

    const line = await waitForDecision(env.paths.audit, (one) => one.request.path === "/body");
    expect(line).toMatchObject({
      verdict: "deny",
      rule: "sentinel-leak",
      status: 403,
      run_id: RUN,
    });
    const first = await waitForDecision(env.paths.audit, (one) => one.request.path === "/h");
    expect(first.request.headers.authorization).toBe("<redacted>");
  });

  it("refuses it on a WebSocket upgrade's request", async () => {
    const auth = `Proxy-Authorization: Basic ${Buffer.from(`${token}:x`).toString("base64")}\r\n`;
    const reply = await rawExchange(env.gateway.port, [
      `GET http://elsewhere.test/socket?k=${SENTINEL} HTTP/1.1\r\nHost: elsewhere.test\r\n${auth}Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
    ]);
    expect(reply.text).toMatch(/^HTTP\/1.1 403/);
    expect(reply.text).toContain("x-roster-rule: sentinel-leak");
  });

  it("marks the run: how many, the first one's time and host", async () => {
    // nine refusals above: the first on disk at once, the rest within a second
    const deadline = Date.now() + 5000;
    let trip = readTrip(env.paths.audit, RUN);
    while ((trip?.count ?? 0) < 9 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      trip = readTrip(env.paths.audit, RUN);
    }
    expect(trip).toMatchObject({ run_id: RUN, count: 9, first_host: "elsewhere.test" });
    expect(Date.parse(trip?.first_at ?? "")).toBeLessThanOrEqual(Date.parse(trip?.last_at ?? ""));
    expect(JSON.stringify(trip)).not.toContain(SENTINEL);
  });

  it("counts the refusals on the door's /metrics as a series of their own", async () => {
    const response = await fetch(`http://127.0.0.1:${env.gateway.port}/metrics`);
    const text = await response.text();
    expect(text).toContain('roster_door_sentinel_leaks_total{worker="elf"} 9');
    expect(text).toContain(
      'roster_door_decisions_total{worker="elf",verdict="deny",rule="sentinel-leak"} 9',
    );
  });

  it("lets pi's key, the sentinel, go to the model's endpoint with no key injected", async () => {
    const reply = await send(`https://model.test:${site.port}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${SENTINEL}`, "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "tool", content: `GITHUB_TOKEN=${SENTINEL}` }] }),
    });
    expect(reply.status).toBe(200);
  });

  it("is what roster policy check says, for a header and for a body", () => {
    const config = loadConfig(env.paths.config, { vaultDir: env.paths.vault });
    const leak = policyCheck(config, {
      worker: "elf",
      method: "GET",
      url: `https://elsewhere.test:${site.port}/`,
      headers: { Authorization: `Bearer ${SENTINEL}` },
    });
    expect(leak).toMatchObject({ verdict: "deny", status: 403, rule: "sentinel-leak" });
    const body = policyCheck(config, {
      worker: "elf",
      method: "POST",
      url: `https://elsewhere.test:${site.port}/`,
      body: Buffer.from(`token=${SENTINEL}`),
    });
    expect(body).toMatchObject({ verdict: "deny", rule: "sentinel-leak" });
    const github = policyCheck(config, {
      worker: "elf",
      method: "GET",
      url: `https://api.github.com:${site.port}/user`,
      headers: { authorization: basic(SENTINEL) },
    });
    expect(github).toMatchObject({
      verdict: "allow",
      rule: "github",
      credential: { name: "github", headers: ["authorization"] },
    });
  });
});
