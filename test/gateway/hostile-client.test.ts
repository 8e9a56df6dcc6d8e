import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { type TLSSocket, connect as tlsConnect } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitForDecision } from "../support/audit.ts";
import { type GatewayEnv, startGatewayEnv } from "../support/gateway-env.ts";
import { drain, HostileUpstream, proxiedGet, sleep, writeAll } from "../support/hostile.ts";
import { rawExchange } from "../support/proxy-clients.ts";

/**
 * Boxes that misbehave: hang up mid-stream, upload too much, drip their
 * headers, hold connections open doing nothing, or send garbage. Each case
 * checks what the box got and that the gateway still answers afterwards.
 */
const sse = async (socket: Socket) => {
  await writeAll(socket, "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n");
  while (!socket.destroyed) {
    await writeAll(socket, "data: tick\n\n");
    await sleep(50);
  }
};
const ok = (socket: Socket) => {
  socket.end("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
};
const sink = (socket: Socket) => {
  // an upload the gateway should never have forwarded
  socket.end("HTTP/1.1 200 OK\r\ncontent-length: 7\r\n\r\nreached");
};

let upstream: HostileUpstream;
let env: GatewayEnv;
let token: string;
let caFile: string;

beforeAll(async () => {
  upstream = await HostileUpstream.start({
    tls: true,
    scripts: { "/sse": sse, "/ok": ok, "/upload": sink },
  });
  const { tmpdir } = await import("node:os");
  const { writeFile } = await import("node:fs/promises");
  caFile = join(tmpdir(), `hostile-client-ca-${process.pid}.pem`);
  await writeFile(caFile, upstream.certificate?.caPem ?? "");
  env = await startGatewayEnv(
    `
[gateway]
upstream_ca = ["${caFile}"]
resolve = { "hostile.test" = "127.0.0.1" }
max_body_bytes = 67108864

[[grant]]
name = "hostile"
verdict = "allow"
match = { host = "hostile.test" }
`,
    { timeouts: { headersMs: 1000, requestMs: 60_000, idleMs: 10_000 } },
  );
  token = await env.token("elf");
});
afterAll(async () => {
  await env?.cleanup();
  await upstream?.stop();
});

const url = (path: string) => `https://hostile.test:${upstream.port}${path}`;
const auth = () => `Proxy-Authorization: Basic ${Buffer.from(`${token}:x`).toString("base64")}`;

async function stillServes(): Promise<void> {
  const { response } = await proxiedGet(env, token, url("/ok"));
  expect(response.statusCode).toBe(200);
  expect(await drain(response)).toEqual({ bytes: 2, complete: true });
}

/** A box's TLS connection through a CONNECT tunnel, trusting the roster CA. */
async function tunnel(): Promise<TLSSocket> {
  const raw = connect(env.gateway.port, "127.0.0.1");
  await new Promise<void>((resolve) => raw.once("connect", () => resolve()));
  raw.write(
    `CONNECT hostile.test:${upstream.port} HTTP/1.1\r\nHost: hostile.test:${upstream.port}\r\n${auth()}\r\n\r\n`,
  );
  await new Promise<void>((resolve) => raw.once("data", () => resolve()));
  const secure = tlsConnect({
    socket: raw,
    servername: "hostile.test",
    ca: readFileSync(join(env.paths.ca, "ca.crt"), "utf8"),
  });
  await new Promise<void>((resolve, reject) => {
    secure.once("secureConnect", resolve);
    secure.once("error", reject);
  });
  secure.on("error", () => undefined);
  return secure;
}

/** Uploads until the gateway answers or closes; returns what came back and how much was sent. */
async function upload(
  secure: TLSSocket,
  headers: string,
  chunked: boolean,
  total: number,
): Promise<{ reply: string; sent: number; closed: boolean }> {
  let reply = "";
  let closed = false;
  secure.on("data", (chunk: Buffer) => {
    reply += chunk.toString("latin1");
  });
  const closing = new Promise<void>((resolve) =>
    secure.once("close", () => {
      closed = true;
      resolve();
    }),
  );
  secure.write(headers);
  const piece = Buffer.alloc(256 * 1024, 0x75);
  let sent = 0;
  while (sent < total && !reply && !secure.destroyed) {
    const framed = chunked
      ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from("\r\n")])
      : piece;
    if (!secure.write(framed)) {
      await Promise.race([new Promise((resolve) => secure.once("drain", resolve)), closing]);
    }
    sent += piece.length;
  }
  await Promise.race([closing, sleep(5000)]);
  return { reply, sent, closed };
}

describe("boxes that hang up", () => {
  it("20 boxes hang up mid-stream on long-lived responses: every upstream socket closes within a second", async () => {
    const streams = await Promise.all(
      Array.from({ length: 20 }, async () => {
        const proxied = await proxiedGet(env, token, url("/sse"));
        await new Promise((resolve) => {
          proxied.response.once("data", resolve);
          proxied.response.resume();
        });
        return proxied;
      }),
    );
    expect(upstream.openSockets).toBeGreaterThanOrEqual(20);
    for (const stream of streams) stream.destroy();
    await upstream.openAtMost(0, 1000);
    const line = await waitForDecision(
      env.paths.audit,
      (record) => record.request.path === "/sse" && record.outcome === "aborted",
    );
    expect(line.bytes).toBeGreaterThan(0);
    await stillServes();
  });
});

describe("uploads over the limit", () => {
  it("100 MB declared against a 64 MB limit: 413 from the header at once, the socket closed", async () => {
    const secure = await tunnel();
    const result = await upload(
      secure,
      `POST /upload HTTP/1.1\r\nHost: hostile.test\r\ncontent-length: ${100 * 1024 * 1024}\r\n\r\n`,
      false,
      100 * 1024 * 1024,
    );
    expect(result.reply).toMatch(/^HTTP\/1.1 413 /);
    expect(result.reply).toMatch(/connection: close/i);
    expect(result.closed).toBe(true);
    // refused from the header: the box had not pushed anything near the limit
    expect(result.sent).toBeLessThan(32 * 1024 * 1024);
    expect(upstream.heads.some((head) => head.startsWith("POST /upload"))).toBe(false);
    const line = await waitForDecision(env.paths.audit, (record) => record.status === 413);
    expect(line.request.bodySize).toBe(100 * 1024 * 1024);
    await stillServes();
  });

  it("a chunked upload is refused as soon as it crosses the limit, the socket closed", async () => {
    const secure = await tunnel();
    const result = await upload(
      secure,
      "POST /upload HTTP/1.1\r\nHost: hostile.test\r\ntransfer-encoding: chunked\r\n\r\n",
      true,
      100 * 1024 * 1024,
    );
    expect(result.reply).toMatch(/^HTTP\/1.1 413 /);
    expect(result.closed).toBe(true);
    expect(result.sent).toBeLessThan(90 * 1024 * 1024);
    expect(upstream.heads.some((head) => head.startsWith("POST /upload"))).toBe(false);
    await stillServes();
  });
});

describe("boxes that stall or send garbage", () => {
  it("slowloris: headers a byte at a time are cut at the header timeout, others are served meanwhile", async () => {
    const socket = connect(env.gateway.port, "127.0.0.1");
    socket.on("error", () => undefined);
    let reply = "";
    socket.on("data", (chunk: Buffer) => {
      reply += chunk.toString();
    });
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    const line = `GET http://hostile.test/ HTTP/1.1\r\nHost: hostile.test\r\nX-Slow: ${"z".repeat(200)}`;
    const started = Date.now();
    void (async () => {
      for (const byte of line) {
        if (socket.destroyed) return;
        socket.write(byte);
        await sleep(100);
      }
    })();
    await stillServes();
    await closed;
    expect(Date.now() - started).toBeLessThan(5000);
    expect(reply).toMatch(/^HTTP\/1.1 408/);
  });

  it("1000 idle connections: a new request is still answered, and the idle ones are closed", async () => {
    const sockets = await Promise.all(
      Array.from(
        { length: 1000 },
        () =>
          new Promise<Socket>((resolve) => {
            const socket = connect(env.gateway.port, "127.0.0.1", () => resolve(socket));
            socket.on("error", () => undefined);
            socket.resume(); // whatever the gateway says before closing is read, so its FIN is seen
          }),
      ),
    );
    await stillServes();
    const deadline = Date.now() + 5000;
    while (sockets.some((socket) => !socket.destroyed && !socket.readableEnded)) {
      if (Date.now() > deadline) break;
      await sleep(50);
    }
    const open = sockets.filter((socket) => !socket.destroyed && !socket.readableEnded).length;
    for (const socket of sockets) socket.destroy();
    expect(open).toBe(0);
    await stillServes();
  });

  it("100 connections of seeded noise, some after a CONNECT: each is answered or closed, the gateway serves on", async () => {
    let state = 1130;
    const random = () => {
      // xorshift: the same noise every run, so a failure reproduces
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      return (state >>> 0) / 4294967296;
    };
    const replies = await Promise.all(
      Array.from({ length: 100 }, () => {
        const noise = Buffer.alloc(1 + Math.floor(random() * 400));
        for (let index = 0; index < noise.length; index++)
          noise[index] = Math.floor(random() * 256);
        const prefix =
          random() < 0.5
            ? `CONNECT hostile.test:${upstream.port} HTTP/1.1\r\nHost: hostile.test\r\n${auth()}\r\n\r\n`
            : "";
        return rawExchange(env.gateway.port, [prefix, noise], 4000);
      }),
    );
    // nothing hangs open past the gateway's own timeouts
    expect(replies.filter((reply) => !reply.closed)).toHaveLength(0);
    await stillServes();
  });

  it.each([
    ["a request line of garbage", "GARBAGE\r\n\r\n"],
    ["a method with no target", "GET\r\n\r\n"],
    ["binary noise", "\u0000\u00ff\u0013\u0037\r\n\r\n"],
    ["a bad HTTP version", "GET http://hostile.test/ HTTP/9.9\r\nHost: hostile.test\r\n\r\n"],
  ])("%s → 400, connection closed", async (_name, bytes) => {
    const reply = await rawExchange(env.gateway.port, [Buffer.from(bytes, "latin1")]);
    expect(reply.text).toMatch(/^HTTP\/1.1 (400|505)/);
    expect(reply.closed).toBe(true);
    await stillServes();
  });
});
