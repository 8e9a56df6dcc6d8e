import { createServer, type Server } from "node:http";
import {
  type AddressInfo,
  createServer as createNetServer,
  type Server as NetServer,
  connect as netConnect,
  type Socket,
} from "node:net";
import { gzipSync } from "node:zlib";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { fetchWithLimits, gatewayRefusal, proxyFor } from "../../extensions/lib/http.ts";

/**
 * The box's way out: every request, http:// included, is a CONNECT to the proxy
 * in the environment (the gateway), with the run's token as its credentials.
 * A stand-in proxy records what it was asked and can refuse as the gateway does.
 */
let origin: Server;
let originPort: number;
let proxy: NetServer;
let proxyUrl: string;
const asked: { line: string; auth: string | undefined }[] = [];
let refuse = false;
/** A proxy that accepts CONNECT and never answers it (the sockets it holds, closed after each test). */
let silent = false;
const held: Socket[] = [];
const big = Buffer.from("0123456789abcdef\n".repeat(256 * 1024));

beforeAll(async () => {
  origin = createServer((req, res) => {
    if (req.url === "/gzip-fin") {
      res.writeHead(200, { "content-encoding": "gzip", connection: "close" });
      res.end(gzipSync(big));
      return;
    }
    res.writeHead(200, { "content-type": "text/plain" });
    res.end(`hello from ${req.headers.host}${req.url}`);
  });
  await new Promise<void>((resolve) => origin.listen(0, "127.0.0.1", resolve));
  originPort = (origin.address() as AddressInfo).port;

  proxy = createNetServer((client: Socket) => {
    client.on("error", () => client.destroy());
    let buffered = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf("\r\n\r\n");
      if (end < 0) return;
      client.off("data", onData);
      const head = buffered.subarray(0, end).toString("latin1");
      const line = head.split("\r\n")[0] ?? "";
      asked.push({ line, auth: /^proxy-authorization: *(.*)$/im.exec(head)?.[1] });
      const [method, target = ""] = line.split(" ");
      if (silent) {
        held.push(client);
        return;
      }
      if (method !== "CONNECT" || refuse) {
        const body = JSON.stringify({ error: "denied by gateway (deny)", hint: "policy said no" });
        client.end(
          `HTTP/1.1 403 Forbidden\r\ncontent-type: application/json\r\nx-roster-verdict: deny\r\nx-roster-rule: no-blogs\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
        );
        return;
      }
      const [host = "", port = "0"] = target.split(":");
      const upstream = netConnect(Number(port), host, () => {
        client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
        upstream.write(buffered.subarray(end + 4));
        client.pipe(upstream);
        upstream.pipe(client);
      });
      upstream.on("error", () => client.destroy());
      client.once("close", () => upstream.destroy());
    };
    client.on("data", onData);
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  proxyUrl = `http://run-token:x@127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});
afterAll(async () => {
  origin.closeAllConnections();
  await new Promise<void>((resolve) => origin.close(() => resolve()));
  await new Promise<void>((resolve) => proxy.close(() => resolve()));
});

/** The environment a box gets: every proxy variable set, NO_PROXY empty. */
const boxEnv = (noProxy = "") => {
  for (const name of ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"])
    vi.stubEnv(name, proxyUrl);
  vi.stubEnv("NO_PROXY", noProxy);
  vi.stubEnv("no_proxy", noProxy);
};
afterEach(() => {
  vi.unstubAllEnvs();
  refuse = false;
  silent = false;
  for (const socket of held.splice(0)) socket.destroy();
});
const limits = { timeoutMs: 5000, maxBytes: 8 * 1024 * 1024, maxRedirects: 5 };

describe("through the proxy from the environment", () => {
  it("tunnels http:// with CONNECT and the run's token", async () => {
    boxEnv();
    const fetched = await fetchWithLimits(`http://127.0.0.1:${originPort}/page?q=1`, limits);
    expect(fetched.status).toBe(200);
    expect(fetched.body.toString()).toBe(`hello from 127.0.0.1:${originPort}/page?q=1`);
    expect(asked.at(-1)).toEqual({
      line: `CONNECT 127.0.0.1:${originPort} HTTP/1.1`,
      auth: `Basic ${Buffer.from("run-token:x").toString("base64")}`,
    });
  });

  it("hands a refused CONNECT back as the gateway's answer, not an error", async () => {
    boxEnv();
    refuse = true;
    const fetched = await fetchWithLimits(`http://127.0.0.1:${originPort}/post`, limits);
    expect(fetched.status).toBe(403);
    expect(gatewayRefusal(fetched)).toBe(
      "denied by policy (rule no-blogs): policy said no — don't retry this URL",
    );
  });

  it("reads a gzip body that ends with FIN inside the tunnel", async () => {
    boxEnv();
    for (let round = 0; round < 2; round++) {
      const fetched = await fetchWithLimits(`http://127.0.0.1:${originPort}/gzip-fin`, limits);
      expect(fetched.truncated).toBe(false);
      expect(fetched.body.equals(big)).toBe(true);
    }
  });

  it("gives up at its deadline when the proxy never answers the CONNECT", async () => {
    boxEnv();
    silent = true;
    const started = Date.now();
    const outcome = await fetchWithLimits(`http://127.0.0.1:${originPort}/never`, {
      ...limits,
      timeoutMs: 500,
    }).then(
      () => "answered",
      (error: Error) => error.message,
    );
    expect(Date.now() - started).toBeLessThan(3000);
    expect(outcome).toMatch(/timed out after/);
  });

  it("goes direct for a NO_PROXY host", async () => {
    boxEnv("localhost, 127.0.0.1");
    const before = asked.length;
    const fetched = await fetchWithLimits(`http://127.0.0.1:${originPort}/direct`, limits);
    expect(fetched.body.toString()).toBe(`hello from 127.0.0.1:${originPort}/direct`);
    expect(asked.length).toBe(before);
  });

  it("picks the proxy per scheme and honours NO_PROXY as undici's EnvHttpProxyAgent does", () => {
    const https = new URL("https://a.example/x");
    const http = new URL("http://a.example/x");
    expect(proxyFor(https, {})).toBeUndefined();
    expect(proxyFor(https, { HTTP_PROXY: "http://h" })).toBe("http://h");
    expect(proxyFor(https, { HTTPS_PROXY: "http://s", HTTP_PROXY: "http://h" })).toBe("http://s");
    expect(proxyFor(http, { HTTPS_PROXY: "http://s" })).toBeUndefined();
    expect(proxyFor(http, { http_proxy: "http://l", HTTP_PROXY: "http://u" })).toBe("http://l");
    expect(
      proxyFor(https, { https_proxy: "", HTTPS_PROXY: "http://s", HTTP_PROXY: "http://h" }),
    ).toBe("http://h");
    const env = { HTTPS_PROXY: "http://s" };
    expect(proxyFor(https, { ...env, NO_PROXY: "*" })).toBeUndefined();
    expect(proxyFor(https, { ...env, NO_PROXY: ".example" })).toBeUndefined();
    expect(proxyFor(https, { ...env, NO_PROXY: "*.a.example" })).toBeUndefined();
    expect(proxyFor(https, { ...env, NO_PROXY: "b.example,ample" })).toBe("http://s");
    expect(proxyFor(https, { ...env, NO_PROXY: "a.example:8443" })).toBe("http://s");
    expect(proxyFor(https, { ...env, NO_PROXY: "a.example:443" })).toBeUndefined();
    expect(proxyFor(https, { ...env, no_proxy: "", NO_PROXY: "a.example" })).toBe("http://s");
  });
});
