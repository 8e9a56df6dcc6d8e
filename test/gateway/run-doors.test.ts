import { spawn } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOOR_SOCKET } from "../../runner/boundary/box/layout.ts";
import { readDecisions } from "../../runner/boundary/gateway/audit/view.ts";
import { doorDir, runDoorDir } from "../../runner/boundary/gateway/doors/door.ts";
import {
  bindToken,
  mintReadyToken,
  mintToken,
  revokeToken,
} from "../../runner/boundary/gateway/doors/identity.ts";
import {
  DOOR_CAP_RULE,
  DOOR_CONNECTION_CAP,
} from "../../runner/boundary/gateway/doors/run-doors.ts";
import { rosterPaths } from "../../runner/ground/config/paths.ts";
import { type GatewayLease, leaseGateway } from "../../runner/work/runs/gateway-lease.ts";
import { throughDoor } from "../support/door-client.ts";
import { type GatewayEnv, startGatewayEnv } from "../support/gateway-env.ts";
import { Upstream } from "../support/upstream.ts";

/**
 * Each box's own door: opened through the lease once the run's token exists,
 * the only door its box is given, capped so that one box holding connections
 * open can't take the gateway from another box, reopened by a gateway
 * restarted in place, and closed when the run ends.
 */
let env: GatewayEnv;
let upstream: Upstream;
let lease: GatewayLease;

beforeAll(async () => {
  upstream = await Upstream.start({ tls: false, handler: (_req, res) => void res.end("ok") });
  env = await startGatewayEnv(
    `
[gateway]
resolve = { "allowed.test" = "127.0.0.1" }

[[grant]]
name = "allowed"
verdict = "allow"
match = { host = "allowed.test" }
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

/** One request to the allowed host through a door's socket; resolves to status and ms. */
const allowedThrough = (dir: string, token: string) =>
  throughDoor(dir, `http://allowed.test:${upstream.port}/hello`, { token });

/**
 * A compromised box in a process of its own: opens `count` connections to its
 * door and holds every one the gateway keeps, sending nothing; prints how many
 * it holds once the gateway has answered every attempt, then waits to be killed.
 */
function flood(dir: string, count: number) {
  const script = `
const { connect } = require("node:net");
const path = ${JSON.stringify(join(dir, DOOR_SOCKET))};
const open = new Set();
let settled = 0, started = 0;
function one() {
  if (started >= ${count}) return;
  started++;
  const socket = connect({ path });
  let done = false;
  // an attempt is settled when the gateway closes it, or when it is still open a second later
  const settle = () => {
    if (done) return;
    done = true;
    if (++settled === ${count}) setTimeout(() => process.stdout.write(JSON.stringify({ held: open.size, settled }) + "\\n"), 500);
    else one();
  };
  socket.on("connect", () => { open.add(socket); setTimeout(settle, 1000); });
  socket.on("close", () => { open.delete(socket); settle(); });
  socket.on("error", () => undefined);
}
for (let i = 0; i < 200; i++) one();
setInterval(() => undefined, 1000);
`;
  const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  const report = new Promise<{ held: number; settled: number }>((resolve) => {
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("\n")) resolve(JSON.parse(out) as { held: number; settled: number });
    });
  });
  return { child, report };
}

describe("a run's own door", () => {
  it("is opened through the lease for a run with a live token, in a folder of its own", async () => {
    const token = await env.token("elf", "run-own-door");
    const dir = await lease.openDoor("run-own-door");
    expect(dir).toBe(runDoorDir(doorDir(env.paths.state, "test"), "run-own-door"));
    expect(statSync(join(dir, DOOR_SOCKET)).isSocket()).toBe(true);
    expect(statSync(dir).mode & 0o777).toBe(0o755);
    expect(await lease.openDoor("run-own-door")).toBe(dir);
    expect((await allowedThrough(dir, token)).status).toBe(200);
    await lease.closeDoor("run-own-door");
    expect(existsSync(dir)).toBe(false);
  });

  it("is refused for a run with no live token, and for a run id that is not a name", async () => {
    await expect(lease.openDoor("run-nobody")).rejects.toThrow(
      "could not open the door of run run-nobody: run run-nobody has no live token: mint it before opening the run's door",
    );
    await expect(lease.openDoor("../escape")).rejects.toThrow(
      /is not one a door can be named after/,
    );
  });

  it("is refused for a ready box's unbound token, and opened once the token is bound at hand-off", async () => {
    const token = await mintReadyToken(env.paths.identity, {
      subject: "org/elf",
      runId: "run-ready",
    });
    await expect(lease.openDoor("run-ready")).rejects.toThrow(/run run-ready has no live token/);
    // a door of another run can't carry it either: the gateway knows no such token
    const other = await env.token("elf", "run-beside-ready");
    const beside = await lease.openDoor("run-beside-ready");
    expect((await allowedThrough(beside, token)).status).toBe(403);
    expect((await allowedThrough(beside, other)).status).toBe(200);

    await bindToken(env.paths.identity, token);
    const dir = await lease.openDoor("run-ready");
    expect((await allowedThrough(dir, token)).status).toBe(200);
    // revoked: refused at once, and it can't be bound again
    await revokeToken(env.paths.identity, token);
    expect((await allowedThrough(dir, token)).status).toBe(403);
    await expect(bindToken(env.paths.identity, token)).rejects.toThrow(/ENOENT/);
    await lease.closeDoor("run-ready");
    await lease.closeDoor("run-beside-ready");
  });

  it("is reopened in the same folder by a gateway restarted in place, and not for a run that ended", async () => {
    const token = await env.token("elf", "run-restart");
    const ended = await env.token("elf", "run-ended");
    const dir = await lease.openDoor("run-restart");
    const endedDir = await lease.openDoor("run-ended");
    await revokeToken(env.paths.identity, ended);
    const inode = statSync(dir).ino;
    await env.restart();
    expect(statSync(dir).ino).toBe(inode);
    expect((await allowedThrough(dir, token)).status).toBe(200);
    expect(existsSync(endedDir)).toBe(false);
  });

  it(`holds at most ${DOOR_CONNECTION_CAP} connections of one box, audited once, while another box is served as before`, async () => {
    // the flooding box never needs its token: it holds connections without a word
    await env.token("elf", "run-flood");
    const calmToken = await env.token("elf", "run-calm");
    const floodDir = await lease.openDoor("run-flood");
    const calmDir = await lease.openDoor("run-calm");
    const baseline: number[] = [];
    for (let i = 0; i < 20; i++) baseline.push((await allowedThrough(calmDir, calmToken)).ms);

    const attempts = 20_000;
    const box = flood(floodDir, attempts);
    const during: number[] = [];
    let answered = 0;
    const calm = (async () => {
      let settled = false;
      void box.report.then(() => {
        settled = true;
      });
      while (!settled || during.length < 20) {
        const { status, ms } = await allowedThrough(calmDir, calmToken);
        if (status === 200) answered++;
        during.push(ms);
      }
    })();
    const report = await box.report;
    await calm;
    try {
      expect(report.settled).toBe(attempts);
      // the box holds its cap and no more, however many it tried
      expect(report.held).toBe(DOOR_CONNECTION_CAP);
      expect(env.gateway.runDoors?.connections("run-flood")).toBe(DOOR_CONNECTION_CAP);
      // the other box was served all along, at about its usual speed
      expect(answered).toBe(during.length);
      const median = (values: number[]) =>
        [...values].sort((a, b) => a - b)[values.length >> 1] ?? 0;
      expect(median(during)).toBeLessThan(Math.max(10 * median(baseline), 100));
      expect(Math.max(...during)).toBeLessThan(2000);
      // one line for the box that hit its cap, not one per connection refused
      const capped = readDecisions(env.paths.audit).filter((line) => line.rule === DOOR_CAP_RULE);
      expect(capped).toHaveLength(1);
      expect(capped[0]).toMatchObject({ run_id: "run-flood", subject: "org/elf", verdict: "deny" });
      expect(capped[0]?.note).toContain(`${DOOR_CONNECTION_CAP} connections`);
    } finally {
      box.child.kill("SIGKILL");
    }
    // the run ends: its door goes, and the connections it held with it
    await lease.closeDoor("run-flood");
    expect(existsSync(floodDir)).toBe(false);
    expect(env.gateway.runDoors?.connections("run-flood")).toBe(0);
  });

  it("is opened the same way by a gateway embedded for one run, and goes with it", async () => {
    const root = await mkdtemp(join(tmpdir(), "roster-gw-"));
    const paths = rosterPaths({ ROSTER_ROOT: root });
    await mkdir(paths.config, { recursive: true });
    await writeFile(
      join(paths.config, "org.toml"),
      `[gateway]\nresolve = { "allowed.test" = "127.0.0.1" }\n\n[[grant]]\nname = "allowed"\nverdict = "allow"\nmatch = { host = "allowed.test" }\n`,
    );
    const embedded = await leaseGateway({
      paths,
      port: 0,
      env: { ...process.env, ROSTER_ROOT: root },
    });
    try {
      const token = await mintToken(paths.identity, { subject: "org/elf", runId: "run-embedded" });
      const dir = await embedded.openDoor("run-embedded");
      expect(dir).toBe(runDoorDir(embedded.door, "run-embedded"));
      expect((await allowedThrough(dir, token)).status).toBe(200);
      await embedded.release();
      expect(existsSync(dir)).toBe(false);
    } finally {
      await embedded.release();
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe("door control", () => {
  it("is refused to a box asking through its door, and the attempt audited", async () => {
    await env.token("elf", "run-asks");
    const dir = await lease.openDoor("run-asks");
    const reply = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const ask = request(
        { socketPath: join(dir, DOOR_SOCKET), method: "POST", path: "/doors/run-other" },
        (response) => {
          const chunks: Buffer[] = [];
          response.on("data", (chunk: Buffer) => chunks.push(chunk));
          response.on("end", () =>
            resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
          );
        },
      );
      ask.on("error", reject);
      ask.end();
    });
    expect(reply.status).toBe(403);
    expect(JSON.parse(reply.body)).toMatchObject({
      hint: "the gateway's doors are opened by the deployment's own runner only (on loopback, with the key in state/identity)",
    });
    expect(existsSync(runDoorDir(doorDir(env.paths.state, "test"), "run-other"))).toBe(false);
    const audited = readDecisions(env.paths.audit).filter(
      (line) => line.request.path === "/doors" && line.rule === "closed",
    );
    expect(audited).toHaveLength(1);
  });

  it("is refused to another local process without the key, and the door it named keeps serving", async () => {
    const token = await env.token("elf", "run-kept");
    const dir = await lease.openDoor("run-kept");
    const ask = (method: string, headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        const asking = request(
          {
            host: "127.0.0.1",
            port: env.gateway.port,
            method,
            path: "/doors/run-kept",
            headers,
            agent: false,
          },
          (response) => {
            response.resume();
            response.on("end", () => resolve(response.statusCode ?? 0));
          },
        );
        asking.on("error", reject);
        asking.end();
      });
    expect(await ask("DELETE", {})).toBe(403);
    expect(await ask("DELETE", { "x-roster-control": "0".repeat(64) })).toBe(403);
    expect(await ask("POST", {})).toBe(403);
    expect((await allowedThrough(dir, token)).status).toBe(200);
    const audited = readDecisions(env.paths.audit).filter(
      (line) => line.note === "gateway door control without its key",
    );
    expect(audited).toHaveLength(3);
    // the deployment's own runner holds the key (state/identity, 0600): its close is taken
    expect(statSync(join(env.paths.identity, "control.key")).mode & 0o777).toBe(0o600);
    await lease.closeDoor("run-kept");
    expect(existsSync(dir)).toBe(false);
    // no one but the deployment's user lists the doors (a run door's name is its run id)
    expect(statSync(join(env.paths.state, "doors")).mode & 0o777).toBe(0o711);
  });
});
