import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
    timeoutMs: 3000,
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
    const started = Date.now();
    const page = await read("/bomb");
    expect(page.text).toContain("only the start was read");
    expect(Date.now() - started).toBeLessThan(5000);
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
    const started = Date.now();
    const page = await read("/never", { timeoutMs: 1500 });
    expect(Date.now() - started).toBeLessThan(4000);
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
