/**
 * A loopback proxy inside the box for the renderer's browser. A browser sends
 * proxy credentials only when challenged, and the door never challenges (a
 * request without the run's token is simply refused), so this adds the box's
 * own credentials — the ones HTTPS_PROXY already carries — to every request
 * on its way to the door, and counts the bytes that pass so a render stays
 * within its bound. It decides nothing: the door judges each request, as it
 * judges every other request from this box.
 */
import { createServer, type IncomingMessage, request, type Server } from "node:http";
import { connect, type Socket } from "node:net";
import type { Duplex } from "node:stream";

export interface Door {
  host: string;
  port: number;
  /** The Proxy-Authorization value, from the proxy URL's user and password. */
  authorization: string;
}

/** The door as HTTPS_PROXY names it (http://<token>:x@127.0.0.1:7300), or undefined. */
export function doorFromEnv(env: NodeJS.ProcessEnv = process.env): Door | undefined {
  const proxy = env.HTTPS_PROXY ?? env.https_proxy;
  if (!proxy) return undefined;
  let url: URL;
  try {
    url = new URL(proxy);
  } catch {
    return undefined;
  }
  const user = decodeURIComponent(url.username);
  const password = decodeURIComponent(url.password);
  return {
    host: url.hostname,
    port: Number(url.port || 80),
    authorization: `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`,
  };
}

export class DoorForwarder {
  /** Bytes relayed in both directions since the start. */
  bytes = 0;
  /** Tunnels and plain requests opened. */
  opened = 0;
  /** True once this page's byte bound was passed: every socket was cut, and new ones are refused. */
  cut = false;
  /** Where this page's bytes started counting. */
  private baseline = 0;
  private readonly sockets = new Set<Duplex>();
  private server: Server | undefined;

  constructor(
    private readonly door: Door,
    private readonly maxBytes: number,
  ) {}

  /** Listens on 127.0.0.1 at a port the system picks; returns it. */
  async start(): Promise<number> {
    const server = createServer((req, res) => {
      // only a proxy's absolute-form request: a page can't use this as a door of its own
      if (this.cut || !/^http:\/\//i.test(req.url ?? "")) {
        res.writeHead(this.cut ? 503 : 400).end();
        return;
      }
      this.opened++;
      this.track(req.socket);
      const upstream = request({
        host: this.door.host,
        port: this.door.port,
        method: req.method,
        path: req.url,
        headers: { ...withoutProxyHeaders(req), "proxy-authorization": this.door.authorization },
      });
      upstream.on("response", (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.on("data", (chunk: Buffer) => this.count(chunk.length));
        answer.pipe(res);
      });
      upstream.on("error", () => res.destroy());
      req.on("data", (chunk: Buffer) => this.count(chunk.length));
      req.pipe(upstream);
    });
    server.on("connect", (req: IncomingMessage, client: Duplex, head: Buffer) => {
      if (this.cut) {
        client.end("HTTP/1.1 503 Service Unavailable\r\n\r\n");
        return;
      }
      this.opened++;
      const target = req.url ?? "";
      const upstream: Socket = connect(this.door.port, this.door.host, () => {
        upstream.write(
          `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\nProxy-Authorization: ${this.door.authorization}\r\n\r\n`,
        );
        if (head.length) upstream.write(head);
        // the door's own answer to the CONNECT goes back as it is: the browser reads it
        upstream.pipe(client);
        client.pipe(upstream);
      });
      for (const socket of [client, upstream]) {
        this.track(socket);
        socket.on("data", (chunk: Buffer) => this.count(chunk.length));
        socket.on("error", () => {
          client.destroy();
          upstream.destroy();
        });
        socket.on("close", () => {
          client.destroy();
          upstream.destroy();
        });
      }
    });
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    return typeof address === "object" && address ? address.port : 0;
  }

  /** A new page: its own byte bound, counted from here, and whatever the last one opened cut. */
  begin(): void {
    for (const socket of this.sockets) socket.destroy();
    this.baseline = this.bytes;
    this.cut = false;
  }

  close(): void {
    for (const socket of this.sockets) socket.destroy();
    this.server?.close();
    this.server?.closeAllConnections();
  }

  private track(socket: Duplex): void {
    this.sockets.add(socket);
    socket.once("close", () => this.sockets.delete(socket));
  }

  private count(size: number): void {
    this.bytes += size;
    if (this.bytes - this.baseline <= this.maxBytes || this.cut) return;
    this.cut = true;
    for (const socket of this.sockets) socket.destroy();
  }
}

/** The browser's own proxy headers never reach the door: the box's credentials replace them. */
function withoutProxyHeaders(req: IncomingMessage): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(req.headers))
    if (value !== undefined && !name.startsWith("proxy-")) headers[name] = value;
  return headers;
}
