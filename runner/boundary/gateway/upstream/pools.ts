import {
  type ClientRequest,
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingMessage,
  type OutgoingHttpHeaders,
} from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { isIP, connect as netConnect, type Socket } from "node:net";
import type { Readable } from "node:stream";
import { createSecureContext, type SecureContext } from "node:tls";
import type { GatewaySection } from "../../../ground/config/config-schema.ts";
import { hostName } from "../../../ground/config/host-name.ts";
import type { GatewayTimeouts } from "../settings/defaults.ts";
import { loadTrustStore, readUpstreamCa, type UpstreamCa } from "../trust/trust-store.ts";
import type { ClosedPorts } from "./closed-ports.ts";
import { ParentProxy, type ParentProxySettings } from "./parent-proxy.ts";
import { ProxiedHttpAgent, ProxiedHttpsAgent } from "./proxied-agents.ts";
import { ClosedPortRefusal, guardedLookup } from "./ssrf.ts";

/**
 * Connection pools to the outside (Node's own http/https clients, keep-alive
 * per origin). Two pools: the guarded one refuses internal addresses at
 * connect time; the other is used only when the deciding grant names the
 * exact host, which is the operator saying "this internal service, on purpose".
 * Neither reaches roster's own ports on this host (ClosedPorts), whatever name
 * resolves there: each connection's lookup knows its port and checks the
 * address it is about to connect to.
 *
 * Why not undici: undici 7's HTTP/1 parser asserts (and kills the process from
 * a socket event no `try` can catch) when an upstream sends FIN while the
 * response body is paused under back-pressure — an ordinary slow client plus
 * an ordinary `Connection: close` server. The fix ships only in undici 8,
 * which needs Node >= 22.19. Node's client pauses the socket instead and
 * treats FIN as data like any other event, on every Node the host supports.
 */
export interface UpstreamOptions {
  /** Static name → address answers, before DNS. */
  resolve: Record<string, string>;
  /** PEM files trusted for upstream TLS beside Node's roots and the host's store. */
  extraCaFiles: string[];
  /** Where the host's store is named (SSL_CERT_FILE, NODE_EXTRA_CA_CERTS): the gateway's own environment. */
  env?: NodeJS.ProcessEnv;
  connectTimeoutMs: number;
  /** From the request being sent to the response's status line and headers. */
  headersTimeoutMs: number;
  /** Longest silence tolerated in the middle of a response body. */
  bodyIdleTimeoutMs: number;
  /** Roster's own ports on this host (the console's, the gateway's): never connected to. */
  closed: ClosedPorts;
  /** A parent proxy every connection goes through, but to hosts it names (parent-proxy.ts). */
  proxy?: Omit<ParentProxySettings, "connectTimeoutMs">;
}

export interface UpstreamTarget {
  protocol: "http" | "https";
  host: string;
  port: number;
}

export interface UpstreamRequest {
  method: string;
  path: string;
  headers: OutgoingHttpHeaders;
  /** Whole, or streamed from the box (its failure cuts the request). */
  body: Buffer | Readable | undefined;
  /** For WebSocket: resolve with the upgraded socket instead of a response. */
  upgrade?: boolean;
}

/** Why an upstream exchange failed before its body began; mapped to 502/504 by the caller. */
export class UpstreamError extends Error {
  constructor(
    message: string,
    readonly kind: "connect-timeout" | "headers-timeout" | "failed",
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export type UpstreamReply =
  | { kind: "response"; response: IncomingMessage }
  | { kind: "upgrade"; response: IncomingMessage; socket: Socket; head: Buffer };

interface Pools {
  http: HttpAgent;
  https: HttpsAgent;
}

interface Connections {
  guarded: Pools;
  named: Pools;
  /** The same two, through the parent proxy, when there is one. */
  proxied?: { guarded: Pools; named: Pools };
}

export class Upstreams {
  private readonly upstreamCa: UpstreamCa[];
  private readonly resolve: Record<string, string>;
  private pools: Connections | undefined;
  private secureContext: SecureContext | undefined;
  readonly proxy: ParentProxy | undefined;

  constructor(readonly options: UpstreamOptions) {
    // read now, so a missing file fails the gateway's start rather than its first request
    this.upstreamCa = readUpstreamCa(options.extraCaFiles);
    this.resolve = lowerKeys(options.resolve);
    this.proxy = options.proxy
      ? new ParentProxy({ ...options.proxy, connectTimeoutMs: options.connectTimeoutMs }, () =>
          this.trust(),
        )
      : undefined;
  }

  /** One trust store (what the host trusts, trust-store.ts), read and parsed once. */
  private trust(): SecureContext {
    // a `ca` list on the agent would be parsed again for every upstream TLS connection
    // (Node's roots are ~140 certificates, the host's store as many)
    this.secureContext ??= createSecureContext({
      ca: loadTrustStore(this.options.env ?? process.env, this.upstreamCa).pems,
    });
    return this.secureContext;
  }

  /**
   * The connection pools, made on first use (or by warm() once the gateway
   * listens): parsing the trust store takes ~60 ms, which a starting gateway
   * should not spend before it listens.
   */
  private connections(): Connections {
    if (this.pools) return this.pools;
    // no `lookup` here: each request brings its own (see send), and an agent's own would win
    const secureContext = this.trust();
    const common = { keepAlive: true, keepAliveMsecs: 1000, maxFreeSockets: 256 };
    const make = (): Pools => ({
      http: new HttpAgent(common),
      https: new HttpsAgent({ ...common, secureContext }),
    });
    const { proxy } = this;
    const proxied = (via: ParentProxy): Pools => ({
      http: new ProxiedHttpAgent(common, via),
      https: new ProxiedHttpsAgent({ ...common, secureContext }, via),
    });
    this.pools = {
      guarded: make(),
      named: make(),
      ...(proxy ? { proxied: { guarded: proxied(proxy), named: proxied(proxy) } } : {}),
    };
    return this.pools;
  }

  /** The pools a host is reached through: the parent proxy's, unless there is none or it names the host. */
  private poolsFor(host: string, allowInternal: boolean): Pools {
    const connections = this.connections();
    const via = this.proxy && !this.proxy.bypasses(host) ? connections.proxied : undefined;
    const set = via ?? connections;
    return allowInternal ? set.named : set.guarded;
  }

  /**
   * A raw connection for a tunnel the door passes unread, by the same guarded
   * lookup (and the parent proxy) as a request; resolves once connected,
   * paused, for the caller to resume once it listens.
   */
  dial(target: { host: string; port: number }, allowInternal: boolean): Promise<Socket> {
    const lookup = guardedLookup(this.resolve, allowInternal, this.options.closed.at(target.port));
    if (this.proxy && !this.proxy.bypasses(target.host)) {
      return this.proxy.open(target.host, target.port, lookup);
    }
    const { connectTimeoutMs } = this.options;
    return new Promise((resolve, reject) => {
      const socket = netConnect({ host: target.host, port: target.port, lookup });
      socket.pause();
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error("connect timeout"));
      }, connectTimeoutMs);
      socket.once("connect", () => {
        clearTimeout(timer);
        resolve(socket);
      });
      socket.once("error", (error) => {
        clearTimeout(timer);
        socket.destroy();
        reject(error);
      });
    });
  }

  /** Makes the pools now, ahead of the first request. */
  warm(): void {
    this.connections();
  }

  /**
   * Sends one request and resolves when the upstream's response headers (or
   * its 101 for an upgrade) arrive. Connect and header waits are bounded; every
   * failure rejects, and the request is destroyed so no socket is left open.
   */
  send(
    target: UpstreamTarget,
    allowInternal: boolean,
    init: UpstreamRequest,
  ): Promise<UpstreamReply> {
    const pools = this.poolsFor(target.host, allowInternal);
    const { connectTimeoutMs, headersTimeoutMs, closed } = this.options;
    const closedAt = closed.at(target.port);
    // an address literal skips `lookup`: checked here, before any connection
    const literal = isIP(hostName(target.host)) ? closedAt?.(target.host) : undefined;
    if (literal) {
      const refusal = new ClosedPortRefusal(target.host, target.host, literal);
      return Promise.reject(new UpstreamError(refusal.message, "failed", { cause: refusal }));
    }
    const options = {
      host: target.host,
      port: target.port,
      // the pool's sockets are keyed by host and port, so a kept one was checked for this port
      lookup: guardedLookup(this.resolve, allowInternal, closedAt),
      method: init.method,
      path: init.path,
      headers: init.headers,
      agent: target.protocol === "https" ? pools.https : pools.http,
    };
    const request = target.protocol === "https" ? httpsRequest(options) : httpRequest(options);
    return awaitReply(request, init.body, connectTimeoutMs, headersTimeoutMs);
  }

  async close(): Promise<void> {
    if (!this.pools) return;
    const { guarded, named, proxied } = this.pools;
    for (const pools of [guarded, named, ...(proxied ? [proxied.guarded, proxied.named] : [])]) {
      pools.http.destroy();
      pools.https.destroy();
    }
  }
}

function describe(error: unknown): string {
  const { code, message } = error as { code?: string; message?: string };
  return code ?? message ?? String(error);
}

function lowerKeys(map: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(map).map(([key, value]) => [hostName(key), value]));
}

/** Hop-by-hop headers: never forwarded in either direction. */
export const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authorization",
  "proxy-authenticate",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
  "expect",
]);

/**
 * The gateway's pools as org.toml's `[gateway]` configures them: the one place
 * that turns the section into Upstreams (the gateway and the desk's MCP
 * executor alike, so both resolve, guard and verify TLS the same way).
 */
export function upstreamsFor(
  section: GatewaySection,
  timeouts: Pick<GatewayTimeouts, "connectMs" | "upstreamHeadersMs" | "upstreamBodyIdleMs">,
  closed: ClosedPorts,
  /** Reads a vault credential (the parent proxy's, `upstream_proxy_auth`): the vault is a room above. */
  vault?: (name: string) => Record<string, unknown> | undefined,
): Upstreams {
  return new Upstreams({
    ...proxyFor(section, vault),
    resolve: Object.fromEntries(
      Object.entries(section.resolve ?? {}).map(([name, address]) => [hostName(name), address]),
    ),
    extraCaFiles: section.upstream_ca ?? [],
    connectTimeoutMs: timeouts.connectMs,
    headersTimeoutMs: timeouts.upstreamHeadersMs,
    bodyIdleTimeoutMs: timeouts.upstreamBodyIdleMs,
    closed,
  });
}

/**
 * Writes the body and waits for the response head (or the 101), each wait
 * bounded; any failure destroys the request, so no socket is left open.
 */
function awaitReply(
  request: ClientRequest,
  body: UpstreamRequest["body"],
  connectTimeoutMs: number,
  headersTimeoutMs: number,
): Promise<UpstreamReply> {
  return new Promise((resolve, reject) => {
    let settled = false;
    let connectTimer: NodeJS.Timeout | undefined;
    const headersTimer = setTimeout(
      () => fail(new UpstreamError("upstream: no answer in time", "headers-timeout")),
      headersTimeoutMs,
    );
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      clearTimeout(headersTimer);
      clearTimeout(connectTimer);
      return true;
    };
    const fail = (error: UpstreamError) => {
      if (!settle()) return;
      request.destroy();
      reject(error);
    };
    request.once("socket", (socket: Socket) => {
      if (!socket.connecting) return;
      connectTimer = setTimeout(
        () => fail(new UpstreamError("upstream: connect timed out", "connect-timeout")),
        connectTimeoutMs,
      );
      socket.once("connect", () => clearTimeout(connectTimer));
    });
    request.once("error", (error) =>
      fail(new UpstreamError(`upstream: ${describe(error)}`, "failed", { cause: error })),
    );
    request.once("response", (response: IncomingMessage) => {
      if (!settle()) return void response.destroy();
      // errors after this point belong to the body: the caller's pipeline sees them
      request.on("error", () => {});
      resolve({ kind: "response", response });
    });
    request.once("upgrade", (response: IncomingMessage, socket: Socket, head: Buffer) => {
      if (!settle()) return void socket.destroy();
      request.on("error", () => {});
      resolve({ kind: "upgrade", response, socket, head });
    });
    if (body === undefined || Buffer.isBuffer(body)) {
      request.end(body && body.length > 0 ? body : undefined);
      return;
    }
    body.once("error", (error) => {
      request.destroy(error);
      fail(new UpstreamError(`upstream: ${describe(error)}`, "failed", { cause: error }));
    });
    body.pipe(request);
  });
}

/** `[gateway] upstream_proxy` and its two companions, as the pools take them. */
function proxyFor(
  section: GatewaySection,
  vault: ((name: string) => Record<string, unknown> | undefined) | undefined,
): Pick<UpstreamOptions, "proxy"> {
  const url = section.upstream_proxy;
  if (!url) return {};
  const name = section.upstream_proxy_auth;
  return {
    proxy: {
      url: url.replace(/\/$/, ""),
      noProxy: section.upstream_no_proxy ?? [],
      ...(name ? { credential: { name, read: () => vault?.(name) } } : {}),
    },
  };
}
