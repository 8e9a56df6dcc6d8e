import { createHash } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitForDecision } from "../support/audit.ts";
import { type GatewayEnv, startGatewayEnv } from "../support/gateway-env.ts";
import { drain, HostileUpstream, proxiedGet, sleep, writeAll } from "../support/hostile.ts";

/**
 * Upstreams that misbehave: each case asserts what the box got, what the audit
 * says, and that the gateway still answers a new request afterwards.
 */
const BIG = 32 * 1024 * 1024; // well past loopback socket buffers: back-pressure is certain
const big = Buffer.alloc(BIG, 0x61);
const bomb = gzipSync(Buffer.alloc(256 * 1024 * 1024));
let dripGate: () => void = () => undefined;

/** A small seeded generator (mulberry32): the same "random" peers on every run, so a failure reproduces. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = seeded(20261130);
const HEADS = [
  "HTTP/1.1 200 OK\r\ncontent-length: 50\r\n\r\n",
  "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",
  "HTTP/1.0 200 OK\r\n\r\n",
  "HTTP/1.1 200 OK\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n",
  "HTTP/1.1 204 No Content\r\ncontent-length: 10\r\n\r\n",
  "",
];

const head = (lines: string[]) => `${lines.join("\r\n")}\r\n\r\n`;

const scripts = {
  "/ok": async (socket: import("node:net").Socket) => {
    socket.end(`${head(["HTTP/1.1 200 OK", "content-length: 2"])}ok`);
  },
  "/http10": async (socket: import("node:net").Socket) => {
    await writeAll(socket, head(["HTTP/1.0 200 OK", "content-type: text/plain"]));
    socket.end(big);
  },
  "/cl-close": async (socket: import("node:net").Socket) => {
    await writeAll(
      socket,
      head(["HTTP/1.1 200 OK", `content-length: ${BIG}`, "connection: close"]),
    );
    socket.end(big);
  },
  "/fin-mid": async (socket: import("node:net").Socket) => {
    await writeAll(socket, head(["HTTP/1.1 200 OK", "content-length: 1000000"]));
    socket.end(Buffer.alloc(10_000, 0x62));
  },
  "/rst-mid": async (socket: import("node:net").Socket) => {
    await writeAll(socket, head(["HTTP/1.1 200 OK", "content-length: 1000000"]));
    await writeAll(socket, Buffer.alloc(10_000, 0x63));
    await sleep(100);
    socket.resetAndDestroy();
  },
  "/stall": () => undefined,
  "/short-stall": async (socket: import("node:net").Socket) => {
    await writeAll(socket, head(["HTTP/1.1 200 OK", "content-length: 1000"]));
    await writeAll(socket, Buffer.alloc(100, 0x64));
    // and then nothing, with the socket held open
  },
  "/bad-status": (socket: import("node:net").Socket) => {
    socket.end("HTTP/1.1 abc Nope\r\n\r\n");
  },
  "/status-099": (socket: import("node:net").Socket) => {
    socket.end(head(["HTTP/1.1 099 Too Early", "content-length: 0"]));
  },
  "/huge-headers": (socket: import("node:net").Socket) => {
    socket.end(head(["HTTP/1.1 200 OK", `x-big: ${"h".repeat(200_000)}`, "content-length: 0"]));
  },
  "/chunked-garbage": async (socket: import("node:net").Socket) => {
    await writeAll(socket, head(["HTTP/1.1 200 OK", "transfer-encoding: chunked"]));
    await writeAll(socket, "5\r\nhello\r\n");
    await sleep(50);
    socket.end("ZZZ-not-a-chunk-size\r\n\r\n");
  },
  "/gzip-bomb": (socket: import("node:net").Socket) => {
    socket.end(
      head([
        "HTTP/1.1 200 OK",
        "content-type: application/octet-stream",
        "content-encoding: gzip",
        `content-length: ${bomb.length}`,
      ]) + bomb.toString("latin1"),
      "latin1",
    );
  },
  "/redirect-private": (socket: import("node:net").Socket) => {
    socket.end(
      head([
        "HTTP/1.1 302 Found",
        "location: http://169.254.169.254/latest/meta-data/",
        "content-length: 0",
      ]),
    );
  },
  "/random": async (socket: import("node:net").Socket) => {
    // a plausible or empty head, then noise, then FIN, RST or silence
    const noise = Buffer.alloc(Math.floor(random() * 300));
    for (let index = 0; index < noise.length; index++) noise[index] = Math.floor(random() * 256);
    const head = HEADS[Math.floor(random() * HEADS.length)] ?? "";
    await writeAll(socket, Buffer.concat([Buffer.from(head, "latin1"), noise]));
    const ending = random();
    if (ending < 0.4) socket.end();
    else if (ending < 0.8) socket.resetAndDestroy();
    // else: hold the socket until the gateway gives up on it
  },
  "/drip": async (socket: import("node:net").Socket) => {
    await writeAll(socket, head(["HTTP/1.1 200 OK", "transfer-encoding: chunked"]));
    await writeAll(socket, "1\r\na\r\n");
    // the rest only once the box has the first byte: a buffering gateway would deadlock here
    await new Promise<void>((resolve) => {
      dripGate = resolve;
    });
    for (const letter of "bcd") {
      await writeAll(socket, `1\r\n${letter}\r\n`);
      await sleep(20);
    }
    socket.end("0\r\n\r\n");
  },
};

let plain: HostileUpstream;
let secure: HostileUpstream;
let env: GatewayEnv;
let token: string;

beforeAll(async () => {
  plain = await HostileUpstream.start({ tls: false, scripts });
  secure = await HostileUpstream.start({ tls: true, scripts });
  const root = await import("node:os").then((os) => os.tmpdir());
  const caFile = join(root, `hostile-ca-${process.pid}.pem`);
  await writeFile(caFile, secure.certificate?.caPem ?? "");
  env = await startGatewayEnv(
    `
[gateway]
upstream_ca = ["${caFile}"]
resolve = { "hostile.test" = "127.0.0.1" }

[gateway.timeouts]
upstream_headers_secs = 1.5
upstream_body_idle_secs = 1

[[grant]]
name = "hostile"
verdict = "allow"
match = { host = "hostile.test" }

[[grant]]
name = "web"
verdict = "allow"
match = { host = "*", method = "GET" }
`,
    { timeouts: { idleMs: 5000 } },
  );
  token = await env.token("elf");
});
afterAll(async () => {
  await env?.cleanup();
  await plain?.stop();
  await secure?.stop();
});

const url = (path: string, tls = false) =>
  tls ? `https://hostile.test:${secure.port}${path}` : `http://hostile.test:${plain.port}${path}`;

async function stillServes(): Promise<void> {
  const { response } = await proxiedGet(env, token, url("/ok"));
  const body = await drain(response);
  expect(response.statusCode).toBe(200);
  expect(body).toEqual({ bytes: 2, complete: true });
}

const lineFor = (path: string) =>
  waitForDecision(env.paths.audit, (record) => record.request.path === path);

describe("upstreams that close while the box is not reading", () => {
  it.each([
    ["HTTP/1.0 without a length", "/http10", false],
    ["Content-Length and Connection: close", "/cl-close", false],
    ["Content-Length and Connection: close, over TLS", "/cl-close", true],
  ] as const)(
    "%s: the box hangs up under back-pressure, the upstream sends FIN",
    async (_name, path, tls) => {
      const upstream = tls ? secure : plain;
      const proxied = await proxiedGet(env, token, url(path, tls));
      expect(proxied.response.statusCode).toBe(200);
      await sleep(300); // the upstream has written everything and sent FIN; nobody reads
      proxied.destroy();
      await upstream.openAtMost(0, 1000);
      const line = await lineFor(path);
      expect(line).toMatchObject({ status: 200, outcome: "aborted" });
      expect(line.bytes).toBeLessThan(BIG);
      await stillServes();
    },
  );

  it.each([
    ["HTTP/1.0 without a length", "/http10", false],
    ["Content-Length and Connection: close, over TLS", "/cl-close", true],
  ] as const)("%s: a slow box still gets every byte after the FIN", async (_name, path, tls) => {
    const before = Date.now();
    const proxied = await proxiedGet(env, token, url(path, tls));
    await sleep(500); // paused past the upstream's FIN
    const body = await drain(proxied.response);
    expect(body).toEqual({ bytes: BIG, complete: true });
    const line = await waitForDecision(
      env.paths.audit,
      (record) => record.request.path === path && Date.parse(record.ts) >= before - 5,
    );
    expect(line).toMatchObject({ status: 200, outcome: "complete", bytes: BIG });
    await stillServes();
  });
});

describe("upstreams that break mid-body", () => {
  it.each([
    ["FIN", "/fin-mid"],
    ["RST", "/rst-mid"],
  ])("%s mid-body: the box sees a cut body, the audit says truncated", async (_name, path) => {
    const proxied = await proxiedGet(env, token, url(path));
    const body = await drain(proxied.response);
    expect(body.complete).toBe(false);
    expect(body.bytes).toBeLessThan(1_000_000);
    const line = await lineFor(path);
    expect(line).toMatchObject({ status: 200, outcome: "truncated" });
    expect(line.bytes).toBe(body.bytes);
    await stillServes();
  });

  it("a Content-Length longer than the body, then silence: cut at the body idle timeout, not held", async () => {
    const started = Date.now();
    const proxied = await proxiedGet(env, token, url("/short-stall"));
    const body = await drain(proxied.response);
    expect(Date.now() - started).toBeLessThan(4000);
    expect(body).toEqual({ bytes: 100, complete: false });
    const line = await lineFor("/short-stall");
    expect(line).toMatchObject({ outcome: "truncated", bytes: 100 });
    expect(line.note).toMatch(/silent/);
    await plain.openAtMost(0, 1000);
    await stillServes();
  });

  it("chunked garbage: the box sees the cut, the audit says truncated", async () => {
    const proxied = await proxiedGet(env, token, url("/chunked-garbage"));
    const body = await drain(proxied.response);
    expect(body.complete).toBe(false);
    expect(await lineFor("/chunked-garbage")).toMatchObject({ outcome: "truncated", bytes: 5 });
    await stillServes();
  });
});

describe("upstreams that never make sense", () => {
  it("an upstream that never answers → 504", async () => {
    const proxied = await proxiedGet(env, token, url("/stall"));
    expect(proxied.response.statusCode).toBe(504);
    await drain(proxied.response);
    await plain.openAtMost(0, 1000);
    await stillServes();
  });

  it.each([
    ["a malformed status line", "/bad-status"],
    ["200 KB of response headers", "/huge-headers"],
    ["a status below 100", "/status-099"],
  ])("%s → 502 with a reason", async (_name, path) => {
    const proxied = await proxiedGet(env, token, url(path));
    expect(proxied.response.statusCode).toBe(502);
    await drain(proxied.response);
    expect(await lineFor(path)).toMatchObject({ status: 502, verdict: "allow" });
    await stillServes();
  });
});

describe("upstreams that send noise", () => {
  it("100 seeded random answers (heads, noise, FIN, RST, silence): every exchange ends, the gateway serves on", async () => {
    const outcomes = await Promise.all(
      Array.from({ length: 100 }, async () => {
        const proxied = await proxiedGet(env, token, url("/random"));
        await drain(proxied.response);
        return proxied.response.statusCode ?? 0;
      }),
    );
    expect(outcomes.every((status) => status >= 100 && status < 600)).toBe(true);
    await plain.openAtMost(0, 3000);
    await stillServes();
  });
});

describe("bodies pass through as they are", () => {
  it("a gzip bomb is relayed compressed, byte for byte, never decoded", async () => {
    const proxied = await proxiedGet(env, token, url("/gzip-bomb"));
    expect(proxied.response.headers["content-encoding"]).toBe("gzip");
    const hash = createHash("sha256");
    let bytes = 0;
    proxied.response.on("data", (chunk: Buffer) => {
      hash.update(chunk);
      bytes += chunk.length;
    });
    await new Promise((resolve) => proxied.response.once("end", resolve).resume());
    expect(bytes).toBe(bomb.length);
    expect(hash.digest("hex")).toBe(createHash("sha256").update(bomb).digest("hex"));
  });

  it("a slow drip is streamed: the first byte reaches the box before the upstream sends the rest", async () => {
    const proxied = await proxiedGet(env, token, url("/drip"));
    const first = await new Promise<string>((resolve) => {
      proxied.response.once("data", (chunk: Buffer) => resolve(chunk.toString()));
      proxied.response.resume();
    });
    expect(first).toBe("a");
    let rest = "";
    proxied.response.on("data", (chunk: Buffer) => {
      rest += chunk.toString();
    });
    dripGate();
    await new Promise((resolve) => proxied.response.once("end", resolve));
    expect(rest).toBe("bcd");
  });

  it("a redirect to a private address is passed to the box, not followed; following it is refused", async () => {
    const seen = plain.heads.length;
    const proxied = await proxiedGet(env, token, url("/redirect-private"));
    expect(proxied.response.statusCode).toBe(302);
    expect(proxied.response.headers.location).toBe("http://169.254.169.254/latest/meta-data/");
    await drain(proxied.response);
    expect(plain.heads.length).toBe(seen + 1);
    const followed = await proxiedGet(env, token, "http://169.254.169.254/latest/meta-data/");
    expect(followed.response.statusCode).toBe(403);
    await drain(followed.response);
  });
});
