/**
 * Hostile peers for the gateway, on real sockets. An upstream that speaks
 * whatever bytes a test scripts (truncated bodies, FIN or RST mid-body, stalls,
 * garbage) and counts the sockets it still holds open; and proxied clients
 * that read slowly, hang up mid-stream or never read at all.
 */
import { readFileSync } from "node:fs";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import {
  type AddressInfo,
  connect,
  createServer as createNetServer,
  type Server,
  type Socket,
} from "node:net";
import { join } from "node:path";
import { createServer as createTlsServer } from "node:tls";
import { HttpsProxyAgent } from "https-proxy-agent";
import type { GatewayEnv } from "./gateway-env.ts";
import { makeServerCertificate, type TestCertificate } from "./test-ca.ts";

/** What a scripted upstream does with one connection, given the request head it read. */
export type Script = (socket: Socket, head: string) => void | Promise<void>;

export class HostileUpstream {
  private readonly open = new Set<Socket>();
  /** Request heads seen, in order (first line and headers). */
  readonly heads: string[] = [];
  private constructor(
    readonly server: Server,
    readonly certificate: TestCertificate | undefined,
    private readonly scripts: Map<string, Script>,
  ) {}

  /** `scripts` are chosen by request path; unknown paths get a 404. */
  static async start(options: {
    tls: boolean;
    scripts: Record<string, Script>;
  }): Promise<HostileUpstream> {
    const certificate = options.tls ? await makeServerCertificate(["hostile.test"]) : undefined;
    const scripts = new Map(Object.entries(options.scripts));
    let upstream: HostileUpstream | undefined;
    const onSocket = (socket: Socket) => {
      upstream?.track(socket);
      socket.on("error", () => socket.destroy());
      let buffered = "";
      const onData = (chunk: Buffer) => {
        buffered += chunk.toString("latin1");
        const end = buffered.indexOf("\r\n\r\n");
        if (end < 0) return;
        socket.off("data", onData);
        const head = buffered.slice(0, end);
        upstream?.heads.push(head);
        const path = head.split(" ")[1] ?? "/";
        const script = scripts.get(path.split("?")[0] ?? path);
        if (!script) {
          socket.end("HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
          return;
        }
        void Promise.resolve(script(socket, head)).catch(() => socket.destroy());
      };
      socket.on("data", onData);
    };
    const server = certificate
      ? createTlsServer({ key: certificate.keyPem, cert: certificate.certPem }, onSocket)
      : createNetServer(onSocket);
    upstream = new HostileUpstream(server, certificate, scripts);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return upstream;
  }

  private track(socket: Socket): void {
    this.open.add(socket);
    socket.once("close", () => this.open.delete(socket));
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** Sockets the gateway still holds open to this upstream. */
  get openSockets(): number {
    return this.open.size;
  }

  /** Resolves when at most `count` sockets are open; rejects after `timeoutMs`. */
  async openAtMost(count: number, timeoutMs: number): Promise<number> {
    const started = Date.now();
    while (this.open.size > count) {
      if (Date.now() - started > timeoutMs) {
        throw new Error(`${this.open.size} upstream sockets still open after ${timeoutMs} ms`);
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return Date.now() - started;
  }

  async stop(): Promise<void> {
    for (const socket of this.open) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

export interface Proxied {
  response: IncomingMessage;
  destroy(): void;
}

/**
 * A GET through the gateway with Node's own client: absolute-form for http://,
 * CONNECT plus TLS (trusting the roster CA, as a box does) for https://. The
 * response is returned paused: the test decides when, and whether, to read.
 */
export function proxiedGet(env: GatewayEnv, token: string, url: string): Promise<Proxied> {
  const target = new URL(url);
  const auth = `Basic ${Buffer.from(`${token}:x`).toString("base64")}`;
  return new Promise((resolve, reject) => {
    const request =
      target.protocol === "https:"
        ? httpsRequest(url, {
            agent: new HttpsProxyAgent(`http://${token}:x@127.0.0.1:${env.gateway.port}`),
            ca: readFileSync(join(env.paths.ca, "ca.crt"), "utf8"),
          })
        : httpRequest({
            host: "127.0.0.1",
            port: env.gateway.port,
            path: url,
            headers: { host: target.host, "proxy-authorization": auth },
          });
    request.once("error", reject);
    request.once("response", (response) => {
      response.pause();
      response.on("error", () => undefined);
      resolve({ response, destroy: () => request.destroy() });
    });
    request.end();
  });
}

/** Reads a response to its end (or its error): bytes received and whether it ended cleanly. */
export function drain(response: IncomingMessage): Promise<{ bytes: number; complete: boolean }> {
  return new Promise((resolve) => {
    let bytes = 0;
    response.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
    });
    response.once("end", () => resolve({ bytes, complete: response.complete }));
    response.once("error", () => resolve({ bytes, complete: false }));
    response.once("close", () => resolve({ bytes, complete: response.complete }));
    response.resume();
  });
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Writes and waits until the kernel took it (or the socket died). */
export function writeAll(socket: Socket, data: string | Buffer): Promise<void> {
  return new Promise((resolve) => {
    if (socket.destroyed) return resolve();
    socket.write(data, () => resolve());
  });
}

/**
 * A peer that sends raw bytes (half a request, garbage) to a server's TCP
 * port or Unix socket and, unless told otherwise, stops sending; resolves
 * with what came back by the time the server closed the connection.
 */
export function rawPeer(
  to: { port: number; host: string } | { path: string },
  bytes: string,
  endAfter = true,
): Promise<{ reply: string; ms: number }> {
  return new Promise((resolve) => {
    const started = Date.now();
    const client = "path" in to ? connect(to.path) : connect(to.port, to.host);
    let reply = "";
    client.on("data", (chunk) => {
      reply += chunk.toString();
    });
    client.on("error", () => undefined);
    client.on("close", () => resolve({ reply, ms: Date.now() - started }));
    client.write(bytes);
    if (endAfter) client.end();
  });
}
