import type { LookupAddress } from "node:dns";
import { isIP, connect as netConnect, type Socket } from "node:net";
import { type SecureContext, connect as tlsConnect } from "node:tls";
import { hostName } from "../../../ground/config/host-name.ts";
import { hostMatches } from "../../../ground/config/host-pattern.ts";
import type { guardedLookup } from "./ssrf.ts";

/**
 * A parent proxy for the door's egress (`[gateway] upstream_proxy`), as on a
 * network whose only way out is a company proxy. Every connection the door
 * makes to the outside becomes a CONNECT tunnel through it, except to hosts
 * `upstream_no_proxy` names.
 *
 * The door judges first, the proxy is asked second: the destination is
 * resolved by the same guarded lookup a direct connection uses (static
 * answers, DNS, no internal address without an exact grant, never one of
 * roster's own ports), and only a name that passed is sent to the proxy.
 *
 * The proxy is asked for the name, not the address the door judged. Company
 * proxies allow and log by name (Squid's dstdomain, TLS inspection's policy
 * by host), and many resolve through DNS the door can't see; a CONNECT to a
 * bare address would be refused by the first and mean nothing to the second.
 * What that leaves is a name whose answer changes between the door's lookup
 * and the proxy's (DNS rebinding): the proxy's own rules are the guard there.
 */
export interface ParentProxySettings {
  /** As configured: http://host:port or https://host:port. */
  url: string;
  /** Host patterns reached directly (`upstream_no_proxy`). */
  noProxy: readonly string[];
  /** The vault credential sent as Proxy-Authorization, read at each new tunnel (so a rotation needs no restart). */
  credential?: { name: string; read: () => Record<string, unknown> | undefined };
  /** Bounds the whole handshake: connecting to the proxy and its answer to CONNECT. */
  connectTimeoutMs: number;
}

export type Lookup = ReturnType<typeof guardedLookup>;

/** The proxy said no, or said nothing: mapped to a 502 naming the proxy and its answer. */
export class ProxyRefusal extends Error {}

/** Longest CONNECT answer head read before giving up on the proxy. */
const MAX_HEAD = 16 * 1024;

export class ParentProxy {
  readonly host: string;
  readonly port: number;
  readonly tls: boolean;

  constructor(
    readonly settings: ParentProxySettings,
    /** The door's upstream trust store, which holds the proxy's CA when it is in upstream_ca. */
    private readonly secureContext: () => SecureContext,
  ) {
    const url = new URL(settings.url);
    this.tls = url.protocol === "https:";
    this.host = url.hostname.replace(/^\[|\]$/g, "");
    this.port = url.port ? Number(url.port) : this.tls ? 443 : 80;
  }

  /** Whether a host is reached directly (`upstream_no_proxy`). */
  bypasses(host: string): boolean {
    const name = hostName(host);
    return this.settings.noProxy.some((pattern) => hostMatches(pattern, name));
  }

  /** Judges the destination by the door's own lookup, then opens a tunnel to it through the proxy. */
  async open(host: string, port: number, lookup: Lookup): Promise<Socket> {
    const name = hostName(host);
    await judged(name, lookup);
    const authorization = this.authorization();
    const socket = await this.connectToProxy();
    return await this.tunnel(socket, name, port, authorization);
  }

  /** The Proxy-Authorization a new tunnel sends, from the vault credential's user and pass, read now. */
  authorization(): string | undefined {
    const credential = this.settings.credential;
    if (!credential) return undefined;
    const value = credential.read();
    const user = value?.user;
    const pass = value?.pass;
    if (typeof user !== "string" || typeof pass !== "string") {
      throw new ProxyRefusal(
        `upstream proxy ${this.settings.url}: the vault credential ${JSON.stringify(credential.name)} (upstream_proxy_auth) ${value ? "has no user and pass fields" : "is not in the vault"}`,
      );
    }
    return `Basic ${Buffer.from(`${user}:${pass}`).toString("base64")}`;
  }

  private connectToProxy(): Promise<Socket> {
    const { connectTimeoutMs, url } = this.settings;
    return new Promise((resolve, reject) => {
      const socket = this.tls
        ? tlsConnect({
            host: this.host,
            port: this.port,
            secureContext: this.secureContext(),
            ...(isIP(this.host) ? {} : { servername: this.host }),
          })
        : netConnect({ host: this.host, port: this.port });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new ProxyRefusal(`upstream proxy ${url}: no connection in ${connectTimeoutMs} ms`));
      }, connectTimeoutMs);
      socket.once(this.tls ? "secureConnect" : "connect", () => {
        clearTimeout(timer);
        resolve(socket);
      });
      socket.once("error", (error: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        socket.destroy();
        reject(new ProxyRefusal(`upstream proxy ${url}: ${error.code ?? error.message}`));
      });
    });
  }

  /** Asks for the tunnel and reads the answer's head; anything but a 2xx is a refusal naming it. */
  private tunnel(
    socket: Socket,
    name: string,
    port: number,
    authorization: string | undefined,
  ): Promise<Socket> {
    const { connectTimeoutMs, url, credential } = this.settings;
    const authority = `${isIP(name) === 6 ? `[${name}]` : name}:${port}`;
    const asked = `CONNECT ${authority}`;
    return new Promise((resolve, reject) => {
      let head = Buffer.alloc(0);
      const finish = (error: ProxyRefusal | undefined) => {
        clearTimeout(timer);
        socket.off("data", onData);
        socket.off("error", onError);
        socket.off("end", onEnd);
        if (error) {
          socket.destroy();
          reject(error);
        } else {
          resolve(socket);
        }
      };
      const timer = setTimeout(
        () =>
          finish(
            new ProxyRefusal(
              `upstream proxy ${url}: no answer to ${asked} in ${connectTimeoutMs} ms`,
            ),
          ),
        connectTimeoutMs,
      );
      const onError = (error: NodeJS.ErrnoException) =>
        finish(
          new ProxyRefusal(`upstream proxy ${url}: ${error.code ?? error.message} during ${asked}`),
        );
      const onEnd = () =>
        finish(
          new ProxyRefusal(
            `upstream proxy ${url}: closed the connection without answering ${asked}`,
          ),
        );
      const onData = (chunk: Buffer) => {
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf("\r\n\r\n");
        if (end < 0) {
          if (head.length > MAX_HEAD)
            finish(
              new ProxyRefusal(`upstream proxy ${url}: an answer to ${asked} too long to read`),
            );
          return;
        }
        socket.pause();
        const statusLine = head.subarray(0, head.indexOf("\r\n")).toString("latin1");
        const status = /^HTTP\/1\.[01] (\d{3})\s*(.*)$/.exec(statusLine);
        if (!status?.[1]) {
          finish(
            new ProxyRefusal(
              `upstream proxy ${url}: answered ${asked} with ${JSON.stringify(statusLine.slice(0, 80))}`,
            ),
          );
          return;
        }
        const code = Number(status[1]);
        if (code < 200 || code > 299) {
          const hint =
            code !== 407
              ? ""
              : credential
                ? `: it refused the vault credential ${JSON.stringify(credential.name)} (upstream_proxy_auth)`
                : ": it wants a credential ([gateway] upstream_proxy_auth)";
          finish(
            new ProxyRefusal(
              `upstream proxy ${url} answered ${code} ${status[2] ?? ""}`.trimEnd() +
                ` to ${asked}${hint}`,
            ),
          );
          return;
        }
        // left paused: whoever reads next resumes it once listening, so no early byte is lost;
        // bytes past the head are the upstream's first, put back for them
        const rest = head.subarray(end + 4);
        if (rest.length) socket.unshift(rest);
        finish(undefined);
      };
      socket.on("data", onData);
      socket.once("error", onError);
      socket.once("end", onEnd);
      const lines = [`${asked} HTTP/1.1`, `Host: ${authority}`];
      if (authorization) lines.push(`Proxy-Authorization: ${authorization}`);
      socket.write(`${lines.join("\r\n")}\r\n\r\n`);
    });
  }
}

/** The door's verdict on where a name leads (SsrfRefusal, ClosedPortRefusal or a DNS error when it may not go). */
function judged(name: string, lookup: Lookup): Promise<void> {
  return new Promise((resolve, reject) => {
    lookup(name, {}, (error: NodeJS.ErrnoException | null, _address: string | LookupAddress[]) => {
      if (error) reject(error);
      else resolve();
    });
  });
}
