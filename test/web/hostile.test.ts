import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import {
  type AddressInfo,
  createServer as createNetServer,
  type Server as NetServer,
  type Socket,
} from "node:net";
import { createGzip, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fetchWithLimits } from "../../extensions/lib/http.ts";
import {
  fetchPages,
  normaliseUrls,
  PAGE_DEFAULTS,
  renderPages,
} from "../../extensions/lib/pages.ts";

/** Pages written to hurt a reader: each must come back capped and legible, never a crash or a hang. */
let server: Server;
let base: string;
const article = (body: string) =>
  `<html><head><title>T</title></head><body><article><h1>Heading</h1>${body}</article></body></html>`;
const longText =
  "<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt.</p>".repeat(
    40,
  );

beforeAll(async () => {
  server = createServer((req, res) => {
    switch (req.url) {
      case "/huge": {
        res.writeHead(200, { "content-type": "text/html" });
        const chunk = `<p>${"x".repeat(1023)}</p>`;
        for (let i = 0; i < 10 * 1024; i++) res.write(chunk);
        res.end();
        return;
      }
      case "/bomb":
        res.writeHead(200, { "content-type": "text/html", "content-encoding": "gzip" });
        res.end(gzipSync(Buffer.alloc(200 * 1024 * 1024, 0x41)));
        return;
      case "/latin1":
        res.writeHead(200, { "content-type": "text/html; charset=iso-8859-1" });
        res.end(Buffer.from(article(`<p>Caf\xe9 cr\xe8me br\xfbl\xe9e.</p>${longText}`), "latin1"));
        return;
      case "/meta-charset":
        res.writeHead(200, { "content-type": "text/html" });
        res.end(
          Buffer.from(
            `<html><head><meta charset="windows-1252"><title>W</title></head><body><article><p>Na\xefve r\xe9sum\xe9 \x93quoted\x94.</p>${longText}</article></body></html>`,
            "latin1",
          ),
        );
        return;
      case "/loop":
        res.writeHead(302, { location: "/loop2" });
        res.end();
        return;
      case "/loop2":
        res.writeHead(302, { location: "/loop" });
        res.end();
        return;
      case "/binary":
        res.writeHead(200, { "content-type": "text/html" });
        res.end(
          Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x00, 0x01, 0x02, 0x03, 0x00, 0xff, 0xfe]),
        );
        return;
      case "/never":
        res.writeHead(200, { "content-type": "text/html" });
        res.write("<html><body><p>the start arrives, the end never does");
        return;
      case "/long":
        res.writeHead(200, { "content-type": "text/plain; charset=utf-8" });
        res.end(Array.from({ length: 3000 }, (_, i) => `line ${i}`).join("\n"));
        return;
      case "/json":
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"a":1,"b":[true,null]}');
        return;
      default:
        res.writeHead(404);
        res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  return new Promise<void>((resolve) => server.close(() => resolve()));
});

const read = async (path: string, over: Partial<typeof PAGE_DEFAULTS> = {}) => {
  const [page] = await fetchPages([`${base}${path}`], {
    ...PAGE_DEFAULTS,
    maxBytes: 2 * 1024 * 1024,
    // long enough for a page that does arrive on a busy machine: a case about
    // the deadline sets its own, on a page that never finishes
    timeoutMs: 30_000,
    ...over,
  });
  if (!page) throw new Error("no page");
  return page;
};

describe("hostile pages", () => {
  it("caps a 10 MB page at the byte limit and says so", async () => {
    const page = await read("/huge");
    expect(page.error).toBeUndefined();
    expect(page.text).toContain("only the start was read");
    expect(page.text.length).toBeLessThan(PAGE_DEFAULTS.maxChars + 1000);
  });

  it("stops a gzip bomb at the decompressed cap", async () => {
    const page = await read("/bomb");
    expect(page.error).toBeUndefined();
    expect(page.text).toContain("only the start was read");
  });

  it("decodes by Content-Type charset and by <meta charset>", async () => {
    expect((await read("/latin1")).text).toContain("Café crème brûlée.");
    expect((await read("/meta-charset")).text).toContain("Naïve résumé “quoted”.");
  });

  it("refuses a redirect loop by name", async () => {
    expect((await read("/loop")).error).toMatch(/redirect loop|more than 5 redirects/);
  });

  it("does not show binary served as text/html", async () => {
    expect((await read("/binary")).text).toMatch(
      /binary content served as text\/html, 12 bytes; not shown/,
    );
  });

  it("gives up on a page that never finishes, within its timeout", async () => {
    // the page never ends: only the deadline can end the read, and it says so
    const started = Date.now();
    const page = await read("/never", { timeoutMs: 1500 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1400);
    expect(`${page.error ?? ""}${page.text}`).toMatch(/timed out|did not finish loading/);
  });

  it("cuts long pages with a marker that says how to read on, and reads on from start", async () => {
    const first = await read("/long", { maxChars: 1000 });
    expect(first.text).toMatch(
      /\[… truncated: showing characters 0–1000 of \d+\. To read on, call fetch_pages with urls=\[".*\/long"\] and start=1000\.\]/,
    );
    const second = await read("/long", { maxChars: 1000, start: 1000 });
    expect(second.text.startsWith("[… characters 0–1000 skipped]")).toBe(true);
    expect(second.text).toContain("line 1");
  });

  it("passes JSON through, pretty-printed, and reports HTTP errors", async () => {
    expect((await read("/json")).text).toBe('{\n  "a": 1,\n  "b": [\n    true,\n    null\n  ]\n}');
    expect((await read("/missing")).error).toBe(`HTTP 404 from 127.0.0.1:${new URL(base).port}`);
  });

  it("normalises what the model passes and skips malformed URLs legibly", async () => {
    const { urls, rejected } = normaliseUrls([
      `${base}/json, ${base}/json#frag  ftp://x.example/file`,
      "not a url",
      "<https://a.example/x>.",
    ]);
    expect(urls).toEqual([`${base}/json`, "https://a.example/x"]);
    expect(rejected).toEqual(["ftp://x.example/file", "not", "a", "url"]);
    const text = renderPages(await fetchPages([urls[0] ?? ""], PAGE_DEFAULTS), rejected);
    expect(text).toContain("(skipped, not http(s) URLs: ftp://x.example/file, not, a, url)");
  });
});

/**
 * Peers that hang up: whole responses written on raw sockets and then a FIN,
 * while the reader is still behind (decoding gzip keeps it behind). undici 7
 * crashed the process right here (an assert in its parser, nodejs/undici#5360).
 */
describe("peers that close their socket under back-pressure", () => {
  let peer: NetServer;
  let peerBase: string;
  const open = new Set<Socket>();
  // ~8 MB of poorly compressible text: a few MB of gzip that decodes slower than it arrives
  const text = Buffer.from(
    Array.from(
      { length: 100_000 },
      (_, i) => `${i} ${createHash("sha256").update(String(i)).digest("hex")}\n`,
    ).join(""),
  );
  const gzipped = gzipSync(text);
  const head = (fields: Record<string, string | number>) =>
    `HTTP/1.1 200 OK\r\n${Object.entries(fields)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join("")}\r\n`;
  const scripts: Record<string, (socket: Socket) => void> = {
    // read-until-close bodies: the FIN is the end of the message
    "/fin-gzip": (socket) => {
      socket.write(head({ "content-encoding": "gzip", connection: "close" }));
      socket.end(gzipped);
    },
    "/fin-plain": (socket) => {
      socket.write(head({ connection: "close" }));
      socket.end(text);
    },
    // a length the peer never delivers: FIN mid-body
    "/cut": (socket) => {
      socket.write(head({ "content-length": text.length, connection: "close" }));
      socket.end(text.subarray(0, 1024 * 1024));
    },
    "/cut-gzip": (socket) => {
      socket.write(
        head({ "content-encoding": "gzip", "content-length": gzipped.length, connection: "close" }),
      );
      socket.end(gzipped.subarray(0, gzipped.length >> 1));
    },
    // answers nothing at all
    "/silent": () => undefined,
    // never ends: only the reader letting go stops it
    "/endless-gzip": (socket) => {
      socket.write(head({ "content-encoding": "gzip", connection: "close" }));
      const gzip = createGzip();
      gzip.on("error", () => undefined);
      gzip.pipe(socket);
      socket.once("close", () => gzip.destroy());
      const pump = () => {
        while (!socket.destroyed && gzip.write(text.subarray(0, 256 * 1024)));
        if (!socket.destroyed) gzip.once("drain", pump);
      };
      pump();
    },
  };

  beforeAll(async () => {
    peer = createNetServer((socket) => {
      open.add(socket);
      socket.once("close", () => open.delete(socket));
      socket.on("error", () => socket.destroy());
      let received = "";
      const onData = (chunk: Buffer) => {
        received += chunk.toString("latin1");
        if (!received.includes("\r\n\r\n")) return;
        socket.off("data", onData);
        const script = scripts[received.split(" ")[1] ?? ""];
        if (script) script(socket);
        else socket.end("HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
      };
      socket.on("data", onData);
    });
    await new Promise<void>((resolve) => peer.listen(0, "127.0.0.1", resolve));
    peerBase = `http://127.0.0.1:${(peer.address() as AddressInfo).port}`;
  });
  afterAll(() => {
    for (const socket of open) socket.destroy();
    return new Promise<void>((resolve) => peer.close(() => resolve()));
  });

  const limits = { timeoutMs: 15_000, maxBytes: 64 * 1024 * 1024, maxRedirects: 5 };
  const stillWorks = async () => {
    const next = await fetchWithLimits(`${base}/json`, limits);
    expect(next.body.toString()).toBe('{"a":1,"b":[true,null]}');
  };

  it("reads a gzip body that ends with FIN while the decoder is behind, every time", async () => {
    for (let round = 0; round < 3; round++) {
      const fetched = await fetchWithLimits(`${peerBase}/fin-gzip`, limits);
      expect(fetched.truncated).toBe(false);
      expect(fetched.body.equals(text)).toBe(true);
      await stillWorks();
    }
  });

  it("reads a plain body that ends with FIN", async () => {
    const fetched = await fetchWithLimits(`${peerBase}/fin-plain`, limits);
    expect(fetched.body.equals(text)).toBe(true);
    await stillWorks();
  });

  it("marks a body cut by FIN mid-way as truncated and keeps what arrived", async () => {
    const plain = await fetchWithLimits(`${peerBase}/cut`, limits);
    expect(plain.truncated).toBe(true);
    expect(plain.body.equals(text.subarray(0, 1024 * 1024))).toBe(true);
    const gzip = await fetchWithLimits(`${peerBase}/cut-gzip`, limits);
    expect(gzip.truncated).toBe(true);
    expect(gzip.body.length).toBeGreaterThan(0);
    expect(gzip.body.equals(text.subarray(0, gzip.body.length))).toBe(true);
    await stillWorks();
  });

  it("gives up on a silent peer at the deadline or the tool's signal, and lets go of it", async () => {
    await expect(
      fetchWithLimits(`${peerBase}/silent`, { ...limits, timeoutMs: 600 }),
    ).rejects.toThrow("timed out after 1 s");
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    await expect(
      fetchWithLimits(`${peerBase}/silent`, { ...limits, signal: controller.signal }),
    ).rejects.toThrow("cancelled");
    const mid = new AbortController();
    setTimeout(() => mid.abort(), 300);
    const page = await fetchWithLimits(`${base}/never`, { ...limits, signal: mid.signal });
    expect(page.timedOut).toBe(true);
    expect(page.body.toString()).toContain("the start arrives");
    const started = Date.now();
    while (open.size > 0 && Date.now() - started < 3000)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(open.size).toBe(0);
  });

  it("lets go of the socket once the decoded cap is reached", async () => {
    const fetched = await fetchWithLimits(`${peerBase}/endless-gzip`, {
      ...limits,
      maxBytes: 2 * 1024 * 1024,
    });
    expect(fetched.truncated).toBe(true);
    expect(fetched.body.length).toBe(2 * 1024 * 1024);
    const started = Date.now();
    while (open.size > 0 && Date.now() - started < 3000)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(open.size).toBe(0);
    await stillWorks();
  });
});
