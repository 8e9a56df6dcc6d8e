import { existsSync, readFileSync, statSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOOR_SOCKET } from "../../runner/boundary/box/layout.ts";
import { readDecisions } from "../../runner/boundary/gateway/audit/view.ts";
import { revokeToken } from "../../runner/boundary/gateway/doors/identity.ts";
import { readJournal } from "../../runner/records/journal/journal.ts";
import { type GatewayLease, leaseGateway } from "../../runner/work/runs/gateway-lease.ts";
import { throughDoor } from "../support/door-client.ts";
import { type GatewayEnv, startGatewayEnv } from "../support/gateway-env.ts";
import { Upstream } from "../support/upstream.ts";

/**
 * The door served by shards (`[gateway] shards`): each run's door opened in
 * one of the gateway's child processes, with what runs share kept exact — an
 * org budget spent through one shard refuses every shard, a revoked token
 * stops a live tunnel at its next request, the audit log written by two
 * shards at once keeps every line whole and each run's lines in order — and
 * a shard that dies replaced, its runs' doors reopened in place.
 */
let env: GatewayEnv;
let upstream: Upstream;
let lease: GatewayLease;

beforeAll(async () => {
  upstream = await Upstream.start({ tls: false, handler: (_req, res) => void res.end("ok") });
  env = await startGatewayEnv(
    `
[gateway]
shards = 2
resolve = { "allowed.test" = "127.0.0.1", "metered.test" = "127.0.0.1" }

[telemetry]
metrics_listen = "127.0.0.1:9"

[[grant]]
name = "allowed"
verdict = "allow"
match = { host = "allowed.test" }

[[grant]]
name = "metered"
verdict = "allow"
match = { host = "metered.test" }

[budget]
currencies = ["calls"]

[[budget.meter]]
match = { rule = "metered" }
spend = { calls = 1 }

[[budget.limit]]
currency = "calls"
window = "day"
max = 3
`,
    { door: true },
  );
  lease = await leaseGateway({ paths: env.paths, port: env.gateway.port, env: process.env });
});
afterAll(async () => {
  await lease?.release();
  await env?.cleanup();
  await upstream?.stop();
});

const auth = (token: string) => `Basic ${Buffer.from(`${token}:x`).toString("base64")}`;

/** One request through a door to `host` (allowed.test, metered.test), resolving to its status. */
const statusThrough = async (dir: string, token: string, host: string, path = "/") =>
  (await throughDoor(dir, `http://${host}:${upstream.port}${path}`, { token })).status;

/**
 * A live tunnel through a door: CONNECT once, then plain HTTP requests one
 * after another on the same connection (the gateway reads plain HTTP inside
 * a tunnel to a non-TLS port), each resolving to its status.
 */
async function tunnel(dir: string, token: string) {
  const socket: Socket = connect({ path: join(dir, DOOR_SOCKET) });
  let buffered = "";
  let waiting: ((text: string) => void) | undefined;
  socket.on("data", (chunk: Buffer) => {
    buffered += chunk.toString("latin1");
    waiting?.(buffered);
  });
  socket.on("error", () => undefined);
  /** Waits for one whole answer (headers and a Content-Length body) and takes it off the buffer. */
  const answer = () =>
    new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error("no answer in the tunnel within 10 s")),
        10_000,
      );
      const look = (text: string) => {
        const end = text.indexOf("\r\n\r\n");
        if (end < 0) return;
        const length = Number(/content-length: *(\d+)/i.exec(text.slice(0, end))?.[1] ?? 0);
        if (text.length < end + 4 + length) return;
        buffered = text.slice(end + 4 + length);
        waiting = undefined;
        clearTimeout(timer);
        resolve(text.slice(0, end));
      };
      waiting = look;
      look(buffered);
      socket.once("close", () => reject(new Error("the tunnel closed")));
    });
  const target = `allowed.test:${upstream.port}`;
  socket.write(
    `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\nProxy-Authorization: ${auth(token)}\r\n\r\n`,
  );
  const opened = await answer();
  expect(opened).toMatch(/^HTTP\/1\.1 200/);
  return {
    get: async (path: string) => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
      return Number((await answer()).split(" ")[1]);
    },
    close: () => socket.destroy(),
  };
}

/** A POST to the action host through a door, as the box's tools send one. */
const toActionHost = async (dir: string, token: string, path: string, body: unknown) =>
  (
    await throughDoor(dir, `http://actions.roster.internal${path}`, {
      token,
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    })
  ).status;

/** Requests each run sends in the load test, over 4 clients. */
const clientsEach = 160;

const shards = () => {
  const running = env.gateway.shards;
  if (!running) throw new Error("the gateway started no shards");
  return running;
};

describe("a gateway with shards", () => {
  it("opens each run's door in one of its shard processes, the least loaded first", async () => {
    const first = await env.token("elf", "run-shard-a");
    const second = await env.token("elf", "run-shard-b");
    const dirA = await lease.openDoor("run-shard-a");
    const dirB = await lease.openDoor("run-shard-b");
    expect(shards().pids).toHaveLength(2);
    expect(shards().pids).not.toContain(process.pid);
    expect([shards().shardOf("run-shard-a"), shards().shardOf("run-shard-b")].sort()).toEqual([
      0, 1,
    ]);
    expect(statSync(join(dirA, DOOR_SOCKET)).isSocket()).toBe(true);
    expect(await statusThrough(dirA, first, "allowed.test")).toBe(200);
    expect(await statusThrough(dirB, second, "allowed.test")).toBe(200);
    // the token must still be this door's own run's, in a shard as in the gateway
    expect(await statusThrough(dirA, second, "allowed.test")).toBe(403);
    await lease.closeDoor("run-shard-a");
    await lease.closeDoor("run-shard-b");
    expect(existsSync(dirA)).toBe(false);
    expect(shards().shardOf("run-shard-a")).toBeUndefined();
  });

  it("hands the action host's requests to the gateway, as the run whose door they came through", async () => {
    const token = await env.token("elf", "run-acts");
    const dir = await lease.openDoor("run-acts");
    const outcome = { status: "completed", note: "through a shard" };
    expect(await toActionHost(dir, token, "/outcome", outcome)).toBe(200);
    const journaled = readJournal(env.paths, "elf", 100).filter(
      (event) => event.run_id === "run-acts",
    );
    expect(journaled).toHaveLength(1);
    expect(String(journaled[0]?.detail)).toContain("through a shard");
    await lease.closeDoor("run-acts");
  });

  it("keeps one budget for every shard: spent through one, refused through the other", async () => {
    const one = await env.token("elf", "run-spend-1");
    const two = await env.token("elf", "run-spend-2");
    const dirOne = await lease.openDoor("run-spend-1");
    const dirTwo = await lease.openDoor("run-spend-2");
    expect(shards().shardOf("run-spend-1")).not.toBe(shards().shardOf("run-spend-2"));
    // the org's limit is 3 calls a day: two through one shard, one through the other
    expect(await statusThrough(dirOne, one, "metered.test")).toBe(200);
    expect(await statusThrough(dirOne, one, "metered.test")).toBe(200);
    expect(await statusThrough(dirTwo, two, "metered.test")).toBe(200);
    expect(await statusThrough(dirTwo, two, "metered.test")).toBe(402);
    expect(await statusThrough(dirOne, one, "metered.test")).toBe(402);
    // each spend is in the one ledger, written once
    const ledger = readFileSync(join(env.paths.audit, "usage.jsonl"), "utf8").trim().split("\n");
    expect(ledger).toHaveLength(3);
    await lease.closeDoor("run-spend-1");
    await lease.closeDoor("run-spend-2");
  });

  it("stops a live tunnel at its next request once the run's token is revoked", async () => {
    const token = await env.token("elf", "run-revoked");
    const dir = await lease.openDoor("run-revoked");
    const live = await tunnel(dir, token);
    try {
      expect(await live.get("/before")).toBe(200);
      await revokeToken(env.paths.identity, token);
      expect(await live.get("/after")).toBe(403);
    } finally {
      live.close();
    }
    const lines = readDecisions(env.paths.audit).filter((line) => line.run_id === "run-revoked");
    expect(lines.map((line) => [line.request.path, line.verdict])).toEqual([
      ["/before", "allow"],
      ["/after", "deny"],
    ]);
    await lease.closeDoor("run-revoked");
  });

  it("writes every line whole, and each run's in order, while two shards write at once", async () => {
    const runs = ["run-load-1", "run-load-2"];
    const tokens = await Promise.all(runs.map((run) => env.token("elf", run)));
    const dirs = await Promise.all(runs.map((run) => lease.openDoor(run)));
    expect(new Set(runs.map((run) => shards().shardOf(run))).size).toBe(2);
    const clients = 4;
    const each = clientsEach / clients;
    // each client's requests go one after another, so its numbers must be audited in order
    await Promise.all(
      runs.flatMap((_, r) =>
        Array.from({ length: clients }, async (_unused, client) => {
          for (let n = 0; n < each; n++) {
            const status = await statusThrough(
              dirs[r] ?? "",
              tokens[r] ?? "",
              "allowed.test",
              `/load/${client}/${n}`,
            );
            expect(status).toBe(200);
          }
        }),
      ),
    );
    const text = readFileSync(join(env.paths.audit, "decisions.jsonl"), "utf8");
    const lines = text.trimEnd().split("\n");
    // whole: every line is one JSON object
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    for (const run of runs) {
      const seen = new Map<string, number>();
      const mine = readDecisions(env.paths.audit).filter((line) => line.run_id === run);
      expect(mine).toHaveLength(clients * each);
      for (const line of mine) {
        const [, , client, n] = line.request.path.split("/");
        const at = Number(n);
        expect(at).toBe((seen.get(client ?? "") ?? -1) + 1);
        seen.set(client ?? "", at);
      }
    }
    for (const run of runs) await lease.closeDoor(run);
  });

  it("adds every shard's numbers up on the gateway's /metrics", async () => {
    const allowed = readDecisions(env.paths.audit).filter(
      (line) => line.rule === "allowed" && line.verdict === "allow",
    ).length;
    expect(allowed).toBeGreaterThan(clientsEach);
    const text = await (await fetch(`http://127.0.0.1:${env.gateway.port}/metrics`)).text();
    expect(text).toContain(
      `roster_door_decisions_total{worker="elf",verdict="allow",rule="allowed"} ${allowed}`,
    );
  });

  it("replaces a shard that dies, reopening its runs' doors in the same folders", async () => {
    const token = await env.token("elf", "run-survives");
    const dir = await lease.openDoor("run-survives");
    expect(await statusThrough(dir, token, "allowed.test")).toBe(200);
    const index = shards().shardOf("run-survives") ?? -1;
    const dead = shards().pids[index] ?? 0;
    expect(dead).toBeGreaterThan(0);
    process.kill(dead, "SIGKILL");
    // wait on the state asserted: a new shard, then the run's door answering again
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const replaced = shards().pids[index] !== dead && shards().shardOf("run-survives") === index;
      if (replaced && (await statusThrough(dir, token, "allowed.test").catch(() => 0)) === 200)
        break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(shards().pids[index]).not.toBe(dead);
    expect(await statusThrough(dir, token, "allowed.test")).toBe(200);
    await lease.closeDoor("run-survives");
  });

  it("starts no more shards once five have died within a minute, serving new doors from those left", async () => {
    // the test above killed one; four more deaths make five
    for (let death = 2; death <= 5; death++) {
      const dead = shards().pids[0] ?? 0;
      process.kill(dead, "SIGKILL");
      const deadline = Date.now() + 20_000;
      const settled = () =>
        death < 5 ? (shards().pids[0] ?? dead) !== dead : shards().pids.length === 1;
      while (!settled() && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 50));
      expect(settled(), `after death ${death}`).toBe(true);
    }
    expect(shards().pids).toHaveLength(1);
    const token = await env.token("elf", "run-after-loop");
    const dir = await lease.openDoor("run-after-loop");
    expect(shards().shardOf("run-after-loop")).toBe(0);
    expect(await statusThrough(dir, token, "allowed.test")).toBe(200);
    await lease.closeDoor("run-after-loop");
  });

  it("reopens live runs' doors over its shards when restarted in place", async () => {
    const tokens = await Promise.all(
      ["run-kept-1", "run-kept-2"].map((run) => env.token("elf", run)),
    );
    const dirs = await Promise.all(["run-kept-1", "run-kept-2"].map((run) => lease.openDoor(run)));
    const inodes = dirs.map((dir) => statSync(dir).ino);
    await env.restart();
    expect(shards().pids).toHaveLength(2);
    expect(new Set(["run-kept-1", "run-kept-2"].map((run) => shards().shardOf(run)))).toEqual(
      new Set([0, 1]),
    );
    for (const [i, dir] of dirs.entries()) {
      expect(statSync(dir).ino).toBe(inodes[i]);
      expect(await statusThrough(dir, tokens[i] ?? "", "allowed.test")).toBe(200);
    }
  });
});
