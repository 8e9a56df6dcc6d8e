import { spawn } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { mkdir, readFile } from "node:fs/promises";
import { connect, createServer } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOOR_SOCKET } from "../../runner/boundary/box/layout.ts";
import {
  doorDir,
  embeddedDoor,
  openDoor,
  sweepDoors,
} from "../../runner/boundary/gateway/doors/door.ts";
import { Gateway } from "../../runner/boundary/gateway/process/gateway.ts";
import { lazyActionHost } from "../../runner/services/actions/lazy-host.ts";
import { type GatewayEnv, startGatewayEnv } from "../support/gateway-env.ts";
import { Upstream } from "../support/upstream.ts";

/**
 * The door: the gateway's Unix socket, a box's only way out. Whatever comes
 * in by it is judged like anything else; the host-only health check is
 * refused there; a second gateway can't take it over; garbage can't stop it.
 */
let env: GatewayEnv;
let upstream: Upstream;
let door: string;

/** One HTTP exchange over the door's socket; the whole reply as text. */
function throughDoor(request: string | Buffer, socketPath = join(door, DOOR_SOCKET)) {
  return new Promise<string>((resolve, reject) => {
    const socket = connect({ path: socketPath });
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("end", () => {
      socket.destroy();
      resolve(Buffer.concat(chunks).toString("utf8"));
    });
    socket.on("error", reject);
    socket.setTimeout(5000, () => socket.destroy(new Error("no answer within 5 s")));
    // written, not ended: a client that half-closes is hung up on before its answer
    socket.write(request);
  });
}

beforeAll(async () => {
  upstream = await Upstream.start({
    tls: false,
    handler: (req, res) => {
      res.end(`saw ${req.url}`);
    },
  });
  env = await startGatewayEnv(
    `
[gateway]
resolve = { "allowed.test" = "127.0.0.1" }

[[grant]]
name = "allowed"
verdict = "allow"
match = { host = "allowed.test" }
`,
    { door: true, timeouts: { headersMs: 1000, idleMs: 10_000 } },
  );
  door = env.gateway.door ?? "";
});
afterAll(async () => {
  await env?.cleanup();
  await upstream?.stop();
});

describe("the gateway's door", () => {
  it("is a socket anyone may open, in a folder anyone may enter (the box's user is not the host's)", () => {
    expect(door).toBe(doorDir(env.paths.state, "test"));
    expect(statSync(door).mode & 0o777).toBe(0o755);
    const socket = statSync(join(door, DOOR_SOCKET));
    expect(socket.isSocket()).toBe(true);
    expect(socket.mode & 0o777).toBe(0o666);
  });

  it("judges what comes in by it: a run's token reaches a granted host, no token is refused", async () => {
    const token = await env.token("elf");
    const auth = Buffer.from(`${token}:x`).toString("base64");
    const allowed = await throughDoor(
      `GET http://allowed.test:${upstream.port}/hello HTTP/1.1\r\nHost: allowed.test:${upstream.port}\r\nProxy-Authorization: Basic ${auth}\r\nConnection: close\r\n\r\n`,
    );
    expect(allowed).toMatch(/^HTTP\/1.1 200/);
    expect(allowed).toContain("saw /hello");
    const anonymous = await throughDoor(
      `GET http://allowed.test:${upstream.port}/hello HTTP/1.1\r\nHost: allowed.test:${upstream.port}\r\nConnection: close\r\n\r\n`,
    );
    expect(anonymous).toMatch(/^HTTP\/1.1 403/);
    expect(anonymous).toContain("x-roster-verdict: deny");
  });

  it("refuses the host's health check to whoever asks by the door, and audits it", async () => {
    const reply = await throughDoor(
      "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    expect(reply).toMatch(/^HTTP\/1.1 403/);
    expect(reply).not.toContain("config_root");
    const audit = await readFile(join(env.paths.audit, "decisions.jsonl"), "utf8");
    expect(audit).toMatch(
      /"path":"\/healthz".*"rule":"closed"|"rule":"closed".*"path":"\/healthz"/,
    );
  });

  it("survives garbage and a peer that hangs up mid-request, and keeps serving", async () => {
    await throughDoor(Buffer.from([0x16, 0x03, 0x01, 0xff, 0xff, 0x00, 0x0d, 0x0a, 0x0d, 0x0a]));
    await new Promise<void>((resolve) => {
      const socket = connect({ path: join(door, DOOR_SOCKET) });
      socket.on("connect", () => {
        socket.write("GET http://allowed.test/ HTTP/1.1\r\nHost: allo");
        socket.destroy();
        resolve();
      });
      socket.on("error", () => resolve());
    });
    const reply = await throughDoor(
      "GET http://nobody.test/ HTTP/1.1\r\nHost: nobody.test\r\nConnection: close\r\n\r\n",
    );
    expect(reply).toMatch(/^HTTP\/1.1 403/);
  });

  it("hangs up on a peer that stalls mid-request, and keeps serving", async () => {
    const started = Date.now();
    const closed = await new Promise<boolean>((resolve) => {
      const socket = connect({ path: join(door, DOOR_SOCKET) });
      socket.on("connect", () => socket.write("GET http://allowed.test/ HTTP/1.1\r\nHost: allo"));
      socket.on("data", () => undefined);
      socket.on("error", () => undefined);
      socket.on("close", () => resolve(true));
      setTimeout(() => {
        socket.destroy();
        resolve(false);
      }, 8000);
    });
    expect(closed).toBe(true);
    expect(Date.now() - started).toBeLessThan(8000);
    const reply = await throughDoor(
      "GET http://nobody.test/ HTTP/1.1\r\nHost: nobody.test\r\nConnection: close\r\n\r\n",
    );
    expect(reply).toMatch(/^HTTP\/1.1 403/);
  });

  it("can't be taken over by a second gateway while the first listens", async () => {
    await expect(
      Gateway.start({
        paths: env.paths,
        listen: [],
        recordState: false,
        door,
        actions: lazyActionHost,
      }),
    ).rejects.toThrow(`another gateway already listens at ${join(door, DOOR_SOCKET)}`);
    // and the first still answers
    const reply = await throughDoor(
      "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    expect(reply).toMatch(/^HTTP\/1.1 403/);
  });

  it("is reopened in the same folder by a restarted gateway, so running boxes find it", async () => {
    await env.restart();
    expect(env.gateway.door).toBe(door);
    const reply = await throughDoor(
      "GET http://nobody.test/ HTTP/1.1\r\nHost: nobody.test\r\nConnection: close\r\n\r\n",
    );
    expect(reply).toMatch(/^HTTP\/1.1 403/);
  });

  it("takes the place of a socket left behind by a gateway that was killed", async () => {
    const dir = doorDir(env.paths.state, "stale");
    // a process that listens on the socket and is then killed leaves the file
    await mkdir(dir, { recursive: true });
    const child = spawn(process.execPath, [
      "-e",
      `require("node:net").createServer().listen(${JSON.stringify(join(dir, DOOR_SOCKET))}, () => process.kill(process.pid, "SIGKILL"))`,
    ]);
    await new Promise((resolve) => child.once("exit", resolve));
    expect(existsSync(join(dir, DOOR_SOCKET))).toBe(true);
    const server = createServer((socket) => {
      socket.resume();
      socket.end("new door\n");
    });
    await openDoor(server, dir);
    const reply = await throughDoor("hi", join(dir, DOOR_SOCKET));
    expect(reply).toBe("new door\n");
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it("refuses a folder whose socket path Linux can't bind, naming it", async () => {
    const dir = join(env.root, "x".repeat(120));
    await expect(openDoor(createServer(), dir)).rejects.toThrow(
      /is longer than a Unix socket path may be \(107 bytes\): use a shorter ROSTER_ROOT/,
    );
  });

  it("sweeps the doors of embedded gateways whose process is gone, and only those", async () => {
    const gone = spawn(process.execPath, ["-e", "0"]);
    await new Promise((resolve) => gone.once("exit", resolve));
    const dead = doorDir(env.paths.state, embeddedDoor(gone.pid ?? 0));
    const live = doorDir(env.paths.state, embeddedDoor(process.ppid));
    await mkdir(dead, { recursive: true });
    await mkdir(live, { recursive: true });
    await sweepDoors(env.paths.state);
    expect(existsSync(dead)).toBe(false);
    expect(existsSync(live)).toBe(true);
    expect(existsSync(door)).toBe(true);
  });
});
