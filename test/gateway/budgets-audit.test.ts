import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
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
resolve = { "metered.test" = "127.0.0.1", "free.test" = "127.0.0.1", "cel.test" = "127.0.0.1", "answer.test" = "127.0.0.1" }

[[grant]]
name = "metered"
verdict = "allow"
match = { host = "metered.test" }

[[grant]]
name = "free"
verdict = "allow"
match = { host = "free.test" }

[[grant]]
name = "cel-metered"
verdict = "allow"
match = { host = "cel.test" }

[[grant]]
name = "answered"
verdict = "allow"
match = { host = "answer.test" }

[budget]
currencies = ["usd", "bytes", "bytes_out"]
vars = { zero = 0 }

[[budget.meter]]
match = { rule = "metered", method = "GET" }
spend = { usd = 0.5 }

# the public roster's spelling: CEL over the call
[[budget.meter]]
match = 'decision.rule == "cel-metered" && request.method == "POST"'
spend = { bytes = "request.bodyBytes" }

# an expression that fails on every call: it spends nothing, and says so
[[budget.meter]]
name = "broken"
match = 'request.host == "cel.test" && request.method == "GET"'
spend = { bytes = "request.bodyBytes / vars.zero" }

[[budget.limit]]
currency = "usd"
window = "day"
max = 1.0

# an answer meter: it spends once the answer has ended (its match, read
# before the answer, keeps other calls clear of its limit)
[[budget.meter]]
match = 'decision.rule == "answered"'
spend = { bytes_out = "response.status == 200 ? response.bytes : 0" }

[[budget.limit]]
currency = "bytes"
window = "day"
max = 10

[[budget.limit]]
currency = "bytes_out"
window = "day"
max = 50
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

describe("budgets in CEL", () => {
  it("spend what the expression says on each request, and refuse with 402 past the limit", async () => {
    const token = await env.token("elf", "run-cel-budget");
    const proxy = proxyUrlFor(env, token);
    const url = `http://cel.test:${upstream.port}/upload`;
    // the failing meter spends nothing and the call goes on while its currency has room
    expect((await viaProxy(proxy, url)).status).toBe(200);
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++)
      statuses.push((await viaProxy(proxy, url, { method: "POST", body: "8 bytes!" })).status);
    // 8 of 10 bytes, then 16 (the call that crosses completes), then refused
    expect(statuses).toEqual([200, 200, 402]);
    // a meter that can't be computed never carries a call past a used-up limit
    const refused = await viaProxy(proxy, url);
    expect(refused.status).toBe(402);
    expect(JSON.parse(refused.body)).toMatchObject({
      detail: "bytes over day cap (16.0000/10.0000)",
    });

    // a forwarded exchange's line is written once its answer has been relayed
    const records = await vi.waitFor(() => {
      const mine = lines()
        .map((line) => JSON.parse(line) as CelLine)
        .filter((line) => line.run_id === "run-cel-budget");
      expect(mine).toHaveLength(5);
      return mine;
    });
    expect(records.map((line) => [line.request.method, line.status, line.spend])).toEqual([
      ["GET", 200, undefined],
      ["POST", 200, { bytes: 8 }],
      ["POST", 200, { bytes: 8 }],
      ["POST", 402, undefined],
      ["GET", 402, undefined],
    ]);
    expect(records[0]?.note).toMatch(
      /^meter failed, spent nothing: broken: "request\.bodyBytes \/ vars\.zero": division by zero/,
    );
  });

  it("spend from the answer once it has ended, and refuse the next call past the limit", async () => {
    const token = await env.token("elf", "run-cel-answer");
    const proxy = proxyUrlFor(env, token);
    const url = `http://answer.test:${upstream.port}/a`;
    const statuses: number[] = [];
    // each echo is about 40 bytes: the second crosses the 50-byte cap and completes
    for (let i = 0; i < 3; i++) {
      statuses.push((await viaProxy(proxy, url)).status);
      // the spend is recorded when the line is: wait for it before the next call
      await vi.waitFor(() => expect(answered()).toHaveLength(i + 1));
    }
    expect(statuses).toEqual([200, 200, 402]);
    const [first, second, refused] = answered();
    expect(first?.bytes).toBeGreaterThan(25);
    expect(first?.spend).toEqual({ bytes_out: first?.bytes });
    expect(second?.spend).toEqual({ bytes_out: second?.bytes });
    expect(refused?.status).toBe(402);
  });
});

const answered = () =>
  lines()
    .map((line) => JSON.parse(line) as CelLine)
    .filter((line) => line.run_id === "run-cel-answer");

interface CelLine {
  run_id: string;
  status: number;
  bytes?: number;
  spend?: Record<string, number>;
  note?: string;
  request: { method: string };
}

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
