import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DecisionRecord } from "../../runner/boundary/gateway/audit/audit.ts";
import { readJournal } from "../../runner/records/journal/journal.ts";
import { OUTCOME_BURST } from "../../runner/services/actions/route-shares.ts";
import { type GatewayLease, leaseGateway } from "../../runner/work/runs/gateway-lease.ts";
import { throughDoor } from "../support/door-client.ts";
import { type GatewayEnv, startGatewayEnv } from "../support/gateway-env.ts";
import { echoHandler, Upstream } from "../support/upstream.ts";

/**
 * A request's run is the door it came through, whatever it says: a request
 * on a run's door with no token is still that run's (counted against its
 * share of the audit log, refused past it), a token for another run is
 * refused there, a tokenless request (the renderer's browser) reads as the
 * run but gets no credential and can't reach the action host, and every
 * request to the action host is an audit line with a share of its own.
 */
let env: GatewayEnv;
let upstream: Upstream;
let lease: GatewayLease;
const SECRET = "REAL-SECRET-door-identity";

beforeAll(async () => {
  upstream = await Upstream.start({ tls: false, handler: echoHandler });
  env = await startGatewayEnv(
    `
[gateway]
resolve = { "api.test" = "127.0.0.1", "other.test" = "127.0.0.1" }
audit_max_per_run = "64k"

[[grant]]
name = "api"
verdict = "allow"
match = { host = ["api.test", "other.test"] }
inject = { credential = "apikey", headers = [{ header = "authorization", value = "Bearer {token}" }] }
`,
    { door: true },
  );
  await env.writeVault("apikey", { token: SECRET });
  lease = await leaseGateway({ paths: env.paths, port: env.gateway.port, env: process.env });
});
afterAll(async () => {
  await lease?.release();
  await env?.cleanup();
  await upstream?.stop();
});

const linesOf = (runId: string): DecisionRecord[] =>
  readFileSync(join(env.paths.audit, "decisions.jsonl"), "utf8")
    .split("\n")
    .filter((line) => line.includes(`"run_id":"${runId}"`))
    .map((line) => JSON.parse(line) as DecisionRecord);

describe("a run's door is the identity of every request on it", () => {
  it("counts a request with no token against the run's share, and refuses the run past it", async () => {
    await env.token("elf", "run-tokenless");
    const dir = await lease.openDoor("run-tokenless");
    const statuses: number[] = [];
    // refused requests made large: 32 headers of 300 bytes and a 600-character path
    const big = Object.fromEntries(
      Array.from({ length: 32 }, (_, i) => [`x-pad-${i}`, "p".repeat(300)]),
    );
    for (let i = 0; i < 400 && !statuses.includes(429); i++) {
      const answer = await throughDoor(dir, `http://blocked.test:9/${"a".repeat(600)}/${i}`, {
        headers: big,
      });
      statuses.push(answer.status);
    }
    expect(statuses.at(-1)).toBe(429);
    expect(statuses.slice(0, -1).every((status) => status === 403)).toBe(true);
    const lines = linesOf("run-tokenless");
    expect(lines.length).toBe(statuses.length - 1);
    expect(lines.every((line) => line.subject === "org/elf" && line.actor === "page")).toBe(true);
    expect(lines.at(-1)?.note).toMatch(/this run's audit is full/);
    // past its share the run's requests are refused and written nowhere, token or not
    for (let i = 0; i < 20; i++)
      expect((await throughDoor(dir, `http://blocked.test:9/more/${i}`)).status).toBe(429);
    expect(linesOf("run-tokenless").length).toBe(lines.length);
    await lease.closeDoor("run-tokenless");
  });

  it("refuses a token for another run on its audit line, and serves the run's own", async () => {
    const own = await env.token("elf", "run-own");
    const other = await env.token("elf", "run-other");
    const dir = await lease.openDoor("run-own");
    const url = `http://api.test:${upstream.port}/data`;
    const wrong = await throughDoor(dir, url, { token: other });
    expect(wrong).toMatchObject({ status: 403, rule: "wrong-run" });
    expect(await throughDoor(dir, url, { token: "not-a-token" })).toMatchObject({
      status: 403,
      rule: "wrong-run",
    });
    expect((await throughDoor(dir, url, { token: own })).status).toBe(200);
    const lines = linesOf("run-own");
    expect(lines.map((line) => line.rule)).toEqual(["wrong-run", "wrong-run", "api"]);
    // the refusal names where the request was going, as any other line does
    expect(lines[0]?.request).toMatchObject({ host: "api.test", path: "/data", method: "GET" });
    expect(linesOf("run-other")).toEqual([]);
    await lease.closeDoor("run-own");
  });

  it("gives a request with no token (a page) no credential, no action host, and only reads across sites", async () => {
    const token = await env.token("elf", "run-page");
    const dir = await lease.openDoor("run-page");
    const url = `http://api.test:${upstream.port}/private`;
    const seenAt = (path: string) => upstream.seen.filter((seen) => seen.url === path).at(-1);

    expect((await throughDoor(dir, `${url}/as-run`, { token })).status).toBe(200);
    expect(seenAt("/private/as-run")?.headers.authorization).toBe(`Bearer ${SECRET}`);
    expect((await throughDoor(dir, `${url}/as-page`)).status).toBe(200);
    expect(seenAt("/private/as-page")).toBeDefined();
    expect(seenAt("/private/as-page")?.headers.authorization).toBeUndefined();

    for (const path of ["/submit", "/outcome"]) {
      const answer = await throughDoor(dir, `http://actions.roster.internal${path}`, {
        method: "POST",
        headers: { "content-type": "text/plain" },
        body: JSON.stringify({ intent: "message-user", payload: { text: "hi" } }),
      });
      expect(answer).toMatchObject({ status: 403, rule: "page" });
    }
    expect(readJournal(env.paths, "elf", 100)).toEqual([]);

    const post = { method: "POST", body: "x=1" };
    expect(await throughDoor(dir, url, post)).toMatchObject({ status: 403, rule: "page" });
    const crossSite = { ...post, headers: { origin: "http://other.test" } };
    expect(await throughDoor(dir, url, crossSite)).toMatchObject({ status: 403, rule: "page" });
    const sameSite = { ...post, headers: { origin: `http://api.test:${upstream.port}` } };
    expect((await throughDoor(dir, url, sameSite)).status).toBe(200);
    await lease.closeDoor("run-page");
  });

  it("writes an audit line for each action-host request and bounds a run's outcome reports", async () => {
    const token = await env.token("elf", "run-outcomes");
    const dir = await lease.openDoor("run-outcomes");
    const note = `${"\u0001".repeat(100)}${"n".repeat(7_890)}`;
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) {
      const answer = await throughDoor(dir, "http://actions.roster.internal/outcome", {
        token,
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ status: "completed", note }),
      });
      statuses.push(answer.status);
    }
    expect(statuses.slice(0, OUTCOME_BURST)).toEqual(Array(OUTCOME_BURST).fill(200));
    expect(statuses.slice(OUTCOME_BURST).every((status) => status === 429)).toBe(true);
    const journaled = readJournal(env.paths, "elf", 100).filter(
      (event) => event.run_id === "run-outcomes",
    );
    expect(journaled.length).toBe(OUTCOME_BURST);
    expect(journaled.every((event) => String(event.detail).length < 2_100)).toBe(true);
    const lines = linesOf("run-outcomes");
    expect(lines.length).toBe(40);
    expect(lines.every((line) => line.rule === "action-host")).toBe(true);
    expect(lines.filter((line) => line.status === 429).length).toBe(40 - OUTCOME_BURST);
    await lease.closeDoor("run-outcomes");
  });
});
