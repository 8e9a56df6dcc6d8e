/**
 * A loopback proxy inside the box for the renderer's browser: it relays every
 * request the browser makes to the door, and counts the bytes that pass so a
 * render stays within its bound. It holds no credential and adds none: the
 * door knows the run by the door itself, and a request that comes without the
 * run's token is the run's *page* — judged by the run's grants and audited as
 * the run, but never given an injected credential, never let reach the action
 * host, and refused any method but GET/HEAD to a site other than its own. So
 * a page's script can't act as the run. Any proxy-* header the browser sent is
 * dropped on the way.
 *
 * Nothing a page does here can throw into pi: every socket and request has its
 * error handled, and a request Node would refuse to send ends that request
 * only. It decides nothing: the door judges each request.
 */
import {
  Agent,
  createServer,
  type IncomingMessage,
  request,
  type Server,
  type ServerResponse,
} from "node:http";
import { connect, type Socket } from "node:net";
import type { Duplex } from "node:stream";

export interface Door {
  host: string;
  port: number;
}

/** The door as HTTPS_PROXY names it (http://<token>:x@127.0.0.1:7300), without its credentials; or undefined. */
export function doorFromEnv(env: NodeJS.ProcessEnv = process.env): Door | undefined {
  const proxy = env.HTTPS_PROXY ?? env.https_proxy;
  if (!proxy) return undefined;
  let url: URL;
  try {
    url = new URL(proxy);
  } catch {
    return undefined;
  }
  const port = Number(url.port || 80);
  if (!url.hostname || !Number.isInteger(port) || port < 1 || port > 65_535) return undefined;
  return { host: url.hostname, port };
}

// An agent of its own for plain requests. Node 24 under NODE_USE_ENV_PROXY
// (which every box sets) points the global agent at the proxy itself, and that
// agent throws at once when the Host header names the page's site rather than
// the door — which an absolute-form request to a proxy always does.
const plainAgent = new Agent({ keepAlive: false });

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
    const server = createServer((req, res) => this.relay(req, res));
    server.on("connect", (req: IncomingMessage, client: Duplex, head: Buffer) =>
      this.tunnel(req, client, head),
    );
    // a browser's malformed request or reset socket ends that socket only
    server.on("clientError", (_error, socket: Duplex) => socket.destroy());
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => {
        server.off("error", reject);
        server.on("error", () => undefined);
        resolve();
      });
    });
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

  /** A plain http:// request, in the absolute form a browser sends a proxy, relayed as it is. */
  private relay(req: IncomingMessage, res: ServerResponse): void {
    // only a proxy's absolute-form request: a page can't use this as a door of its own
    if (this.cut || !/^http:\/\//i.test(req.url ?? "")) {
      res.writeHead(this.cut ? 503 : 400).end();
      return;
    }
    this.opened++;
    this.track(req.socket);
    const fail = () => {
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    };
    req.on("error", () => res.destroy());
    res.on("error", () => req.destroy());
    let upstream: ReturnType<typeof request>;
    try {
      upstream = request({
        host: this.door.host,
        port: this.door.port,
        method: req.method,
        path: req.url,
        headers: withoutProxyHeaders(req),
        agent: plainAgent,
      });
    } catch {
      // a request Node won't send (a header it refuses, say) fails for the browser alone
      fail();
      return;
    }
    upstream.on("error", fail);
    res.on("close", () => upstream.destroy());
    upstream.on("response", (answer) => {
      answer.on("error", () => res.destroy());
      try {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
      } catch {
        answer.destroy();
        fail();
        return;
      }
      answer.on("data", (chunk: Buffer) => this.count(chunk.length));
      answer.pipe(res);
    });
    req.on("data", (chunk: Buffer) => this.count(chunk.length));
    req.pipe(upstream);
  }

  /** A CONNECT: a tunnel to the door, which answers the CONNECT itself (the browser reads that answer). */
  private tunnel(req: IncomingMessage, client: Duplex, head: Buffer): void {
    client.on("error", () => client.destroy());
    if (this.cut) {
      client.end("HTTP/1.1 503 Service Unavailable\r\n\r\n");
      return;
    }
    const target = req.url ?? "";
    this.opened++;
    let upstream: Socket;
    try {
      upstream = connect(this.door.port, this.door.host);
    } catch {
      client.end("HTTP/1.1 502 Bad Gateway\r\n\r\n");
      return;
    }
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
    upstream.once("connect", () => {
      // the browser's own headers stay behind: the door hears the target and nothing else
      upstream.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
      if (head.length) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
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

/** The browser's own proxy headers (Proxy-Authorization, Proxy-Connection) never reach the door. */
function withoutProxyHeaders(req: IncomingMessage): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(req.headers))
    if (value !== undefined && !name.startsWith("proxy-")) headers[name] = value;
  return headers;
}
