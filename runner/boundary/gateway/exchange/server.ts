import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { TLSSocket } from "node:tls";
import { hostName } from "../../../ground/config/host-name.ts";
import { type Identity, TokenResolver } from "../doors/identity.ts";
import { parseAbsolute, parseConnectTarget, whereOf } from "../judging/proxy-targets.ts";
import { denied, type Refusal, sendRefusal, writeRawRefusal } from "../judging/refusals.ts";
import type { Target } from "../judging/request-facts.ts";
import type { GatewayTimeouts } from "../settings/defaults.ts";
import type { CertificateAuthority } from "../trust/ca.ts";
import { admit, requestFacts, upstreamRefusal } from "./admission.ts";
import { type Caller, callerOf, doorRunOf } from "./caller.ts";
import { type ExchangeDeps, handleRequest } from "./exchange.ts";
import { answerHostRoute, type DoorControl } from "./host-routes.ts";
import { pipeTunnel } from "./raw-tunnel.ts";
import { handleUpgrade } from "./websocket.ts";

/**
 * The proxy's sockets: the outer listener (CONNECT, absolute-form http://,
 * /healthz) and the inner HTTP server that parses what arrives inside a
 * tunnel — TLS terminated with a leaf from the host CA, or plain HTTP (pi sends
 * even http:// base URLs through CONNECT).
 */
export interface ServerDeps extends ExchangeDeps {
  ca: CertificateAuthority;
  identityDir: string;
  configRoot: string;
  resolve: Record<string, string>;
  timeouts: GatewayTimeouts;
  /** Opens and closes run doors (run-doors.ts); set once the gateway has its doors. */
  doors?: DoorControl;
  /** The door's numbers at /metrics, when telemetry asks for them. */
  metrics?: MetricsSource;
}

/** What /metrics serves: the door's numbers (audit/door-metrics.ts), its shards' added in. */
export interface MetricsSource {
  text(): Promise<string>;
  /** The same as prom-client's JSON, which adds up across processes. */
  series(): Promise<object[]>;
  readonly contentType: string;
}

interface TunnelContext {
  target: Target;
  /** The CONNECT's Proxy-Authorization: re-resolved per request, so revoking a token stops a live tunnel. */
  tokenHeader: string | undefined;
  /** The run whose door the CONNECT came through (caller.ts), if it did. */
  door: Identity | undefined;
}

const tunnels = new WeakMap<object, TunnelContext>();

export function createProxyServers(deps: ServerDeps): { outer: Server; inner: Server } {
  const tokens = new TokenResolver(deps.identityDir);
  const identify: Identify = (header, door) =>
    callerOf((token) => tokens.resolve(token), header, door);
  // stalled clients are found by a periodic sweep: sweep often enough for the timeouts to mean something
  const serverOptions = {
    maxHeaderSize: 32 * 1024,
    connectionsCheckingInterval: Math.max(250, Math.min(30_000, deps.timeouts.headersMs / 4)),
  };
  const inner = createServer(serverOptions);
  const outer = createServer(serverOptions);
  for (const server of [inner, outer]) bound(server, deps);
  serveTunnelled(inner, deps, identify);
  serveOuter(outer, inner, deps, identify);
  return { outer, inner };
}

/** Who a request speaks for: its Proxy-Authorization, and the run door it came through (caller.ts). */
type Identify = (header: string | undefined, door: Identity | undefined) => Caller;

/** Every timeout on one server, and a legible refusal (audited) of what can't be parsed. */
function bound(server: Server, deps: ServerDeps): void {
  server.headersTimeout = deps.timeouts.headersMs;
  server.requestTimeout = deps.timeouts.requestMs;
  server.keepAliveTimeout = deps.timeouts.keepAliveMs;
  // a box that stops reading or sending for this long loses the connection, and its upstream with it
  server.timeout = deps.timeouts.idleMs;
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => {
    const status =
      error.code === "HPE_HEADER_OVERFLOW"
        ? 431
        : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
          ? 408
          : 400;
    const refusal: Refusal = {
      status,
      body: {
        error:
          status === 431
            ? "request headers too large"
            : status === 408
              ? "request timed out"
              : "malformed HTTP request",
      },
    };
    // a peer that hung up was refused nothing: there is no one to answer
    if (error.code !== "ECONNRESET") auditUnread(deps, undefined, refusal);
    writeRawRefusal(socket, refusal);
  });
}

/**
 * The inner server: what arrives inside a tunnel, judged against the CONNECT
 * that opened it (its target, and its token, re-read per request).
 */
function serveTunnelled(inner: Server, deps: ServerDeps, identify: Identify): void {
  inner.on("request", (req: IncomingMessage, res: ServerResponse) => {
    const context = tunnels.get(req.socket);
    if (!context) return sendRefusal(res, auditUnread(deps, undefined, NO_TUNNEL));
    const caller = identify(context.tokenHeader, context.door);
    const identity = caller.identity;
    const where = { target: context.target, method: req.method, rawPath: req.url };
    if (caller.refusal) return sendRefusal(res, auditUnread(deps, identity, caller.refusal, where));
    const mismatch = hostMismatch(deps, req, context.target, identity);
    if (mismatch) return sendRefusal(res, mismatch);
    void handleRequest(deps, req, res, context.target, identity, req.url ?? "/").catch(
      (error: unknown) => sendRefusal(res, upstreamRefusal(error, undefined)),
    );
  });
  inner.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const context = tunnels.get(req.socket);
    if (!context) return writeRawRefusal(socket, auditUnread(deps, undefined, NO_TUNNEL));
    const caller = identify(context.tokenHeader, context.door);
    const identity = caller.identity;
    const where = { target: context.target, method: req.method, rawPath: req.url };
    if (caller.refusal)
      return writeRawRefusal(socket, auditUnread(deps, identity, caller.refusal, where));
    const mismatch = hostMismatch(deps, req, context.target, identity);
    if (mismatch) return writeRawRefusal(socket, mismatch);
    handleUpgrade(deps, req, socket, head, context.target, identity, req.url ?? "/").catch(() =>
      socket.destroy(),
    );
  });
}

/** The outer server: the host's own routes, absolute-form http:// requests, CONNECT. */
function serveOuter(outer: Server, inner: Server, deps: ServerDeps, identify: Identify): void {
  outer.on("request", (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? "";
    const caller = identify(req.headers["proxy-authorization"], doorRunOf(req.socket));
    const identity = caller.identity;
    if (answerHostRoute(deps, req, res, () => identity)) return;
    const absolute = parseAbsolute(url);
    if (caller.refusal)
      return sendRefusal(res, auditUnread(deps, identity, caller.refusal, whereOf(req, absolute)));
    if (!absolute) return sendRefusal(res, auditUnread(deps, identity, NOT_A_PROXY_REQUEST));
    void handleRequest(deps, req, res, absolute.target, identity, absolute.path).catch(
      (error: unknown) => sendRefusal(res, upstreamRefusal(error, undefined)),
    );
  });
  outer.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const caller = identify(req.headers["proxy-authorization"], doorRunOf(req.socket));
    const identity = caller.identity;
    const absolute = parseAbsolute(req.url ?? "");
    if (caller.refusal)
      return writeRawRefusal(
        socket,
        auditUnread(deps, identity, caller.refusal, whereOf(req, absolute)),
      );
    if (!absolute) return writeRawRefusal(socket, auditUnread(deps, identity, NOT_A_PROXY_REQUEST));
    handleUpgrade(deps, req, socket, head, absolute.target, identity, absolute.path).catch(() =>
      socket.destroy(),
    );
  });
  outer.on("connect", (req: IncomingMessage, socket: Socket, head: Buffer) => {
    socket.on("error", () => socket.destroy());
    const tokenHeader = req.headers["proxy-authorization"];
    const door = doorRunOf(req.socket);
    const caller = identify(tokenHeader, door);
    const identity = caller.identity;
    const target = parseConnectTarget(req.url ?? "");
    if (caller.refusal) {
      const where = target && {
        target: { protocol: "https" as const, ...target },
        method: "CONNECT",
      };
      return writeRawRefusal(socket, auditUnread(deps, identity, caller.refusal, where));
    }
    if (!target) {
      writeRawRefusal(
        socket,
        auditUnread(deps, identity, {
          status: 400,
          body: {
            error: `malformed CONNECT target ${JSON.stringify(req.url ?? "")}`,
            hint: "CONNECT host:port",
          },
        }),
      );
      return;
    }
    openTunnel(deps, inner, socket, head, target, identity, { tokenHeader, door }).catch(() =>
      socket.destroy(),
    );
  });
}

/** The stable rule name of a refusal made before a request could be read as one. */
export const UNREAD_RULE = "unreadable";

const NO_TUNNEL = denied(undefined, "no tunnel context");
const NOT_A_PROXY_REQUEST: Refusal = {
  status: 400,
  body: {
    error: "not a proxy request",
    hint: "send CONNECT host:port, or an absolute http:// URL",
  },
};

/**
 * A refusal of something that never became a request the admission sequence
 * could judge (malformed, not a proxy request, no tunnel behind it): audited
 * all the same, with what is known of who sent it. Returns the refusal to send.
 */
function auditUnread(
  deps: ServerDeps,
  identity: Identity | undefined,
  refusal: Refusal,
  /** What is known of where it was going (a request refused for its token), if anything. */
  where?: { target: Target; method?: string | undefined; rawPath?: string | undefined },
): Refusal {
  deps.audit.record(
    requestFacts({
      target: where?.target ?? { protocol: "http", host: "gateway", port: 0 },
      method: where?.method ?? "?",
      rawPath: where?.method === "CONNECT" ? "" : (where?.rawPath ?? "/"),
      headers: {},
      identity,
      bodySize: 0,
    }),
    {
      verdict: "deny",
      rule: refusal.rule ?? UNREAD_RULE,
      status: refusal.status,
      note: String(refusal.body.error),
    },
  );
  return refusal;
}

async function openTunnel(
  deps: ServerDeps,
  inner: Server,
  socket: Socket,
  head: Buffer,
  target: { host: string; port: number },
  identity: Identity | undefined,
  who: Pick<TunnelContext, "tokenHeader" | "door">,
): Promise<void> {
  // a CONNECT is judged on its target alone: its own headers are the proxy's, not the request's
  const facts = requestFacts({
    target: { protocol: "https", ...target },
    method: "CONNECT",
    rawPath: "",
    headers: {},
    identity,
    bodySize: 0,
  });
  const admission = admit(deps, facts, "connect", Buffer.alloc(0));
  if (admission.kind === "tunnel") {
    await pipeTunnel(deps, socket, head, target, facts, admission.grant);
    return;
  }
  socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
  socket.setTimeout(deps.timeouts.idleMs, () => socket.destroy());
  const context: TunnelContext = { target: { protocol: "https", ...target }, ...who };
  const first = head.length ? head : await firstChunk(socket);
  if (!first) return;
  socket.unshift(first);
  if (first[0] === 0x16) {
    const tls = new TLSSocket(socket, {
      isServer: true,
      secureContext: await deps.ca.leafContext(target.host),
      SNICallback: (servername, callback) => {
        deps.ca.leafContext(servername).then(
          (context) => callback(null, context),
          (error: Error) => callback(error),
        );
      },
      ALPNProtocols: ["http/1.1"],
    });
    tls.on("error", () => tls.destroy());
    tls.on("close", () => socket.destroy());
    tunnels.set(tls, context);
    inner.emit("connection", tls);
  } else {
    context.target = { protocol: "http", ...target };
    tunnels.set(socket, context);
    inner.emit("connection", socket);
    socket.resume();
  }
}

function firstChunk(socket: Socket): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const onData = (chunk: Buffer) => {
      cleanup();
      socket.pause();
      resolve(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(undefined);
    };
    const cleanup = () => {
      socket.off("data", onData);
      socket.off("end", onEnd);
      socket.off("close", onEnd);
    };
    socket.on("data", onData);
    socket.on("end", onEnd);
    socket.on("close", onEnd);
  });
}

/**
 * Inside a tunnel the Host header must name the CONNECT target: no fronting
 * another host. A refusal here is audited like any other.
 */
function hostMismatch(
  deps: ServerDeps,
  req: IncomingMessage,
  target: Target,
  identity: Identity | undefined,
): Refusal | undefined {
  const header = req.headers.host;
  if (!header) return undefined;
  const name = hostName(header.replace(/:\d+$/, ""));
  if (name === target.host) return undefined;
  const refusal = denied(
    undefined,
    `the Host header (${name}) must name the host this tunnel was opened to (${target.host})`,
  );
  const facts = requestFacts({
    target,
    method: req.method ?? "GET",
    rawPath: req.url ?? "/",
    headers: req.headers,
    identity,
    bodySize: 0,
  });
  deps.audit.line(facts).write({ verdict: "deny", rule: undefined, status: 403, note: "fronting" });
  return refusal;
}
