import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DecisionRecord } from "../../runner/boundary/gateway/audit/audit.ts";
import { runDir, writeRecord } from "../../runner/records/run-records/run-record.ts";
import { runRoster } from "../support/cli.ts";
import { type GatewayEnv, proxyUrlFor, startGatewayEnv } from "../support/gateway-env.ts";
import { viaProxy } from "../support/proxy-clients.ts";
import { Upstream } from "../support/upstream.ts";
import { answer, anthropicStream, chatJson } from "../support/usage-model.ts";

/**
 * Model usage metered at the door: the gateway reads the tokens a provider
 * reports (a stream's events, a JSON body), records them and their price in
 * the call's audit line, and spends them from `tokens` and `usd` budgets
 * (and from a CEL meter that reads `usage`, once the answer has ended).
 * The call that crosses a cap finishes whole; the next one gets 402 with
 * Retry-After, and a restart does not reset the count.
 */
let upstream: Upstream;
let env: GatewayEnv;

beforeAll(async () => {
  upstream = await Upstream.start({
    tls: false,
    handler: async (req, res) => {
      if (req.url === "/v1/messages")
        await answer(
          res,
          anthropicStream({ model: "claude-sonnet-4-5", input: 300, output: 200, cacheRead: 100 }),
          true,
        );
      else if (req.url === "/v1/chat/completions")
        await answer(
          res,
          chatJson({ model: "house-model", input: 400, output: 100, cacheRead: 100 }),
          false,
        );
      else res.writeHead(404).end();
    },
  });
  env = await startGatewayEnv(`
[gateway]
resolve = { "models.test" = "127.0.0.1" }

[[grant]]
name = "models"
verdict = "allow"
match = { host = "models.test" }

# a meter in CEL on the usage the answer reports: spent once the answer has ended
[[budget.meter]]
match = 'decision.rule == "models"'
spend = { out_tokens = "usage.output" }

[[budget.price]]
model = "house-*"
input = 1.0
output = 2.0
cache_read = 0.5

[[budget.limit]]
currency = "tokens"
window = "day"
max = 1000
`);
});
afterAll(async () => {
  await env?.cleanup();
  await upstream?.stop();
});

const decisions = (): DecisionRecord[] =>
  readFileSync(join(env.paths.audit, "decisions.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as DecisionRecord);

describe("model usage at the door", () => {
  it("records tokens and cost per call, lets the crossing call finish, then answers 402", async () => {
    const token = await env.token("elf", "run-usage");
    const proxy = proxyUrlFor(env, token);
    const call = (path: string) =>
      viaProxy(proxy, `http://models.test:${upstream.port}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      });

    const streamed = await call("/v1/messages");
    expect(streamed.status).toBe(200);
    expect(streamed.body).toContain("message_stop"); // the whole stream reached the client
    const first = decisions().at(-1);
    expect(first?.usage).toEqual({
      model: "claude-sonnet-4-5",
      input: 300,
      output: 200,
      cache_read: 100,
      cache_write: 0,
      cost_usd: expect.closeTo(0.00393, 8),
    });
    expect(first?.spend).toEqual({ out_tokens: 200 });

    // 600 tokens so far; this one (600 more) crosses the 1000 cap and still completes
    const crossing = await call("/v1/chat/completions");
    expect(crossing.status).toBe(200);
    expect(JSON.parse(crossing.body).choices[0].message.content).toBe("hello");
    expect(decisions().at(-1)?.usage).toMatchObject({
      model: "house-model",
      input: 400,
      cache_read: 100,
      output: 100,
      cost_usd: expect.closeTo(0.00065, 8), // 400 × $1 + 100 × $2 + 100 × $0.50 per million
    });
    expect(decisions().at(-1)?.spend).toEqual({ out_tokens: 100 });

    const refused = await call("/v1/messages");
    expect(refused.status).toBe(402);
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
    expect(JSON.parse(refused.body)).toMatchObject({
      error: "budget exceeded",
      detail: "tokens over day cap (1200.0000/1000.0000)",
    });
    expect(upstream.seen).toHaveLength(2); // the refused call never reached the provider

    await env.restart();
    expect((await call("/v1/chat/completions")).status).toBe(402);
    expect(upstream.seen).toHaveLength(2);
  });

  it("shows each limit's spend (roster budget) and a run's tokens and cost (roster runs show)", async () => {
    const rosterEnv = { ROSTER_ROOT: env.root };
    const budget = await runRoster(["budget", "--json"], rosterEnv);
    expect(budget.code, budget.stderr).toBe(0);
    expect(JSON.parse(budget.stdout)).toMatchObject({
      scope: "org",
      currency: "tokens",
      window: "day",
      max: 1000,
      used: 1200,
      remaining: 0,
    });
    const readable = await runRoster(["budget"], rosterEnv);
    expect(readable.stdout).toMatch(/^org\s+tokens\s+day\s+1200 of 1000 used, 0 left; resets /);
    expect((await runRoster(["budget", "--worker", "nobody"], rosterEnv)).code).toBe(2);

    await writeRecord(runDir(env.paths.state, "elf", "run-usage"), {
      id: "run-usage",
      worker: "elf",
      kind: "box",
      state: "done",
      started_at: new Date().toISOString(),
    });
    const shown = await runRoster(["runs", "show", "run-usage"], rosterEnv);
    expect(shown.code, shown.stderr).toBe(0);
    // 0.00393 + 0.00065 dollars over both calls
    expect(shown.stdout).toContain(
      "model     1200 tokens over 2 model call(s) (input 700, output 300, cache read 200, cache write 0), $0.0046",
    );
    // the same for a script
    const json = await runRoster(["runs", "show", "run-usage", "--json"], rosterEnv);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      id: "run-usage",
      state: "done",
      usage: { calls: 2, input: 700, output: 300, cache_read: 200, cache_write: 0 },
      conversation: [],
      files: expect.arrayContaining([{ name: "run.json", bytes: expect.any(Number) }]),
    });
  });
});
