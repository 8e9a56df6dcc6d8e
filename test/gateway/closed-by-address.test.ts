import { existsSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import { connect } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOOR_SOCKET } from "../../runner/boundary/box/layout.ts";
import { readDecisions } from "../../runner/boundary/gateway/audit/view.ts";
import { type GatewayLease, leaseGateway } from "../../runner/work/runs/gateway-lease.ts";
import { type GatewayEnv, startGatewayEnv } from "../support/gateway-env.ts";
import { freePort } from "../support/roster-root.ts";
import { Upstream } from "../support/upstream.ts";

/**
 * Roster's own ports stay closed by the address a name resolves to, not only
 * by the name: a grant for `svc.internal` that the operator resolves to
 * 127.0.0.1 lets a box reach services there, but never the gateway's own
 * port (whose door control would close another run's door and whose health
 * check names the host's config) nor the console's — through a plain
 * request, a request inside a tunnel, or a raw tunnel a grant passes. Two
 * runs, each through its own real door.
 */
let env: GatewayEnv;
let lease: GatewayLease;
let upstream: Upstream;
let consoleStandIn: Server;
let consolePort: number;
let consoleHits = 0;
const doors: Record<string, { dir: string; token: string }> = {};

beforeAll(async () => {
  upstream = await Upstream.start({ tls: false, handler: (_req, res) => void res.end("ok") });
  consolePort = await freePort();
  consoleStandIn = createServer((_req, res) => {
    consoleHits++;
    res.end("console");
  });
  await new Promise<void>((resolve) => consoleStandIn.listen(consolePort, "127.0.0.1", resolve));
  env = await startGatewayEnv(
    `
[console]
listen = "127.0.0.1:${consolePort}"

[gateway]
resolve = { "svc.internal" = "127.0.0.1", "raw.internal" = "127.0.0.1", "mapped.internal" = "::ffff:127.0.0.1" }

[[grant]]
name = "svc"
verdict = "allow"
match = { host = "svc.internal" }

[[grant]]
name = "mapped"
verdict = "allow"
match = { host = "mapped.internal" }

[[grant]]
name = "raw"
verdict = "tunnel"
match = { host = "raw.internal" }
`,
    { door: true },
  );
  lease = await leaseGateway({ paths: env.paths, port: env.gateway.port, env: process.env });
  for (const run of ["run-a", "run-b"]) {
    const token = await env.token("elf", run);
    doors[run] = { dir: await lease.openDoor(run), token };
  }
});
afterAll(async () => {
  await lease?.release();
  await env?.cleanup();
  await upstream?.stop();
  await new Promise((resolve) => consoleStandIn?.close(resolve));
});

const auth = (token: string) => `Basic ${Buffer.from(`${token}:x`).toString("base64")}`;

function door(run: string): { dir: string; token: string } {
  const found = doors[run];
  if (!found) throw new Error(`no door for ${run}`);
  return found;
}

/** An absolute-form request through a run's door, as a box's HTTP_PROXY client sends it. */
function viaDoor(
  run: string,
  method: string,
  url: string,
): Promise<{ status: number; body: string }> {
  const { dir, token } = door(run);
  return new Promise((resolve, reject) => {
    const ask = request(
      {
        socketPath: join(dir, DOOR_SOCKET),
        method,
        path: url,
        headers: { host: new URL(url).host, "proxy-authorization": auth(token) },
        agent: false,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () =>
          resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
        );
      },
    );
    ask.setTimeout(10_000, () => ask.destroy(new Error("no answer within 10 s")));
    ask.on("error", reject);
    ask.end();
  });
}

/**
 * A CONNECT through a run's door, then `inner` sent down the tunnel once it
 * opens; resolves to everything the gateway sent back (both answers).
 */
function tunnelViaDoor(run: string, target: string, inner: string): Promise<string> {
  const { dir, token } = door(run);
  return new Promise((resolve, reject) => {
    const socket = connect({ path: join(dir, DOOR_SOCKET) });
    let reply = "";
    let sent = false;
    socket.setTimeout(10_000, () => socket.destroy(new Error("no answer within 10 s")));
    socket.on("data", (chunk: Buffer) => {
      reply += chunk.toString();
      if (!sent && reply.startsWith("HTTP/1.1 200") && reply.includes("\r\n\r\n")) {
        sent = true;
        socket.write(inner);
      }
      // one answer inside the tunnel, then done
      if (sent && /\r\n\r\n[\s\S]*HTTP\/1\.1 \d{3}[\s\S]*\r\n\r\n\{[\s\S]*\}$/.test(reply))
        socket.end();
    });
    socket.on("error", reject);
    socket.on("close", () => resolve(reply));
    socket.write(
      `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\nProxy-Authorization: ${auth(token)}\r\n\r\n`,
    );
  });
}

const closedLines = (runId: string) =>
  readDecisions(env.paths.audit).filter((line) => line.run_id === runId && line.rule === "closed");

describe("roster's own ports, closed by the address a name resolves to", () => {
  it("a box can't close another run's door through a grant resolving to loopback; that run goes on", async () => {
    const gw = env.gateway.port;
    // the grant works for what it is for
    const fine = await viaDoor("run-b", "GET", `http://svc.internal:${upstream.port}/`);
    expect(fine).toMatchObject({ status: 200, body: "ok" });

    const close = await viaDoor("run-b", "DELETE", `http://svc.internal:${gw}/doors/run-a`);
    expect(close.status).toBe(403);
    expect(close.body).not.toContain('"closed":"run-a"');
    expect(JSON.parse(close.body)).toMatchObject({
      rule: "closed",
      hint: expect.stringContaining(`port ${gw} on this host is roster's gateway`),
    });
    expect(existsSync(join(door("run-a").dir, DOOR_SOCKET))).toBe(true);
    const next = await viaDoor("run-a", "GET", `http://svc.internal:${upstream.port}/`);
    expect(next).toMatchObject({ status: 200, body: "ok" });

    const line = closedLines("run-b").find((entry) => entry.request.method === "DELETE");
    expect(line).toMatchObject({ verdict: "deny", status: 403, subject: "org/elf" });
    expect(line?.note).toContain("svc.internal resolves to 127.0.0.1 (this host)");
  });

  it("a box can't read the gateway's health check (the host's config path) that way, however the address is spelt", async () => {
    for (const name of ["svc.internal", "mapped.internal"]) {
      const health = await viaDoor("run-b", "GET", `http://${name}:${env.gateway.port}/healthz`);
      expect(health.status, name).toBe(403);
      expect(health.body).not.toContain(env.paths.config);
      expect(health.body).not.toContain("config_root");
    }
  });

  it("nor inside a tunnel the gateway opens and judges, nor through a raw tunnel a grant passes", async () => {
    const gw = env.gateway.port;
    const inner = await tunnelViaDoor(
      "run-b",
      `svc.internal:${gw}`,
      `DELETE /doors/run-a HTTP/1.1\r\nHost: svc.internal:${gw}\r\nContent-Length: 0\r\n\r\n`,
    );
    expect(inner).toMatch(/HTTP\/1\.1 403/);
    expect(inner).not.toContain('"closed":"run-a"');

    const raw = await tunnelViaDoor(
      "run-b",
      `raw.internal:${gw}`,
      `GET /healthz HTTP/1.1\r\nHost: raw.internal\r\n\r\n`,
    );
    expect(raw).toMatch(/^HTTP\/1\.1 403/);
    expect(raw).not.toContain("config_root");
    expect(
      closedLines("run-b").some(
        (line) => line.request.method === "CONNECT" && line.request.host === "raw.internal",
      ),
    ).toBe(true);
    expect((await viaDoor("run-a", "GET", `http://svc.internal:${upstream.port}/`)).status).toBe(
      200,
    );
  });

  it("the console's port the same way, while the host itself still reaches it", async () => {
    const before = consoleHits;
    const reply = await viaDoor("run-b", "GET", `http://svc.internal:${consolePort}/`);
    expect(reply.status).toBe(403);
    expect(JSON.parse(reply.body).hint).toContain("roster's console");
    const raw = await tunnelViaDoor(
      "run-b",
      `raw.internal:${consolePort}`,
      "GET / HTTP/1.1\r\n\r\n",
    );
    expect(raw).toMatch(/^HTTP\/1\.1 403/);
    expect(consoleHits).toBe(before);
    expect(await (await fetch(`http://127.0.0.1:${consolePort}/`)).text()).toBe("console");
  });
});
