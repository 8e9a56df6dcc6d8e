import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runRoster } from "../support/cli.ts";
import { type GatewayEnv, proxyUrlFor, startGatewayEnv } from "../support/gateway-env.ts";
import { viaProxy } from "../support/proxy-clients.ts";
import { Upstream } from "../support/upstream.ts";

let upstream: Upstream;
let env: GatewayEnv;

beforeAll(async () => {
  upstream = await Upstream.start({ tls: false });
  env = await startGatewayEnv(`
[gateway]
resolve = { "metered.test" = "127.0.0.1", "free.test" = "127.0.0.1" }

[[grant]]
name = "metered"
verdict = "allow"
match = { host = "metered.test" }

[[grant]]
name = "free"
verdict = "allow"
match = { host = "free.test" }

[budget]
currencies = ["usd"]

[[budget.meter]]
match = { rule = "metered", method = "GET" }
spend = { usd = 0.5 }

[[budget.limit]]
currency = "usd"
window = "day"
max = 1.0
`);
});
afterAll(async () => {
  await env?.cleanup();
  await upstream?.stop();
});

const lines = () =>
  readFileSync(join(env.paths.audit, "decisions.jsonl"), "utf8").split("\n").filter(Boolean);

describe("budgets", () => {
  it("lets the call that crosses the limit complete, then answers 402 — even after a restart", async () => {
    const token = await env.token("elf", "run-budget");
    const url = `http://metered.test:${upstream.port}/call`;
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++)
      statuses.push((await viaProxy(proxyUrlFor(env, token), url)).status);
    expect(statuses).toEqual([200, 200, 402]);

    const refused = await viaProxy(proxyUrlFor(env, token), url);
    expect(refused.status).toBe(402);
    expect(refused.headers["x-roster-verdict"]).toBe("budget");
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
    expect(JSON.parse(refused.body)).toMatchObject({
      error: "budget exceeded",
      detail: "usd over day cap (1.0000/1.0000)",
    });
    // unmetered hosts are unaffected
    expect(
      (await viaProxy(proxyUrlFor(env, token), `http://free.test:${upstream.port}/`)).status,
    ).toBe(200);

    await env.restart();
    expect((await viaProxy(proxyUrlFor(env, token), url)).status).toBe(402);
    const usage = readFileSync(join(env.paths.audit, "usage.jsonl"), "utf8").trim().split("\n");
    expect(usage).toHaveLength(2);
  });
});

describe("the decision log", () => {
  it("writes exactly one whole line per request for 50 concurrent clients × 20 requests", async () => {
    const before = lines().length;
    const token = await env.token("load", "run-load");
    const proxy = proxyUrlFor(env, token);
    const client = async (n: number) => {
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++) {
        const response = await viaProxy(proxy, `http://free.test:${upstream.port}/c${n}/r${i}`);
        statuses.push(response.status);
      }
      return statuses;
    };
    const results = await Promise.all(Array.from({ length: 50 }, (_, n) => client(n)));
    expect(results.flat().every((status) => status === 200)).toBe(true);
    const added = lines().slice(before);
    expect(added).toHaveLength(1000);
    const paths = new Set(
      added.map((line) => (JSON.parse(line) as { request: { path: string } }).request.path),
    );
    expect(paths.size).toBe(1000);
  });

  it("`roster gateway log` shows what a run reached and what it was refused", async () => {
    const token = await env.token("elf", "run-logview-42");
    await viaProxy(proxyUrlFor(env, token), `http://free.test:${upstream.port}/ok`);
    await viaProxy(proxyUrlFor(env, token), `http://elsewhere.test:${upstream.port}/no`);
    const { stdout } = await runRoster(["gateway", "log", "--run", "run-logview"], {
      ROSTER_ROOT: env.root,
    });
    expect(stdout).toMatch(/allow 200\s+GET http:\/\/free\.test:\d+\/ok\s+\[rule free\]/);
    expect(stdout).toMatch(/REFUSED 403\s+GET http:\/\/elsewhere\.test:\d+\/no\s+\[no rule\]/);
    expect(stdout).toMatch(/elsewhere\.test\s+reached 0, refused 1/);
    const denied = await runRoster(
      ["gateway", "log", "--run", "run-logview", "--denied", "--json"],
      {
        ROSTER_ROOT: env.root,
      },
    );
    const records = denied.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { request: { host: string } });
    expect(records.map((record) => record.request.host)).toEqual(["elsewhere.test"]);
  });
});
