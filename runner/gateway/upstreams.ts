import { readFileSync } from "node:fs";
import { rootCertificates } from "node:tls";
import { Agent } from "undici";
import { guardedLookup } from "./ssrf.ts";

/**
 * Connection pools to the outside (undici, keep-alive per origin). Two pools:
 * the guarded one refuses internal addresses at connect time; the other is used
 * only when the deciding grant names the exact host, which is the operator
 * saying "this internal service, on purpose".
 */
export interface UpstreamOptions {
  /** Static name → address answers, before DNS. */
  resolve: Record<string, string>;
  /** PEM files trusted for upstream TLS beside the system roots. */
  extraCaFiles: string[];
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
}

export class Upstreams {
  private readonly guarded: Agent;
  private readonly named: Agent;

  constructor(options: UpstreamOptions) {
    const ca = [
      ...rootCertificates,
      ...options.extraCaFiles.map((file) => readFileSync(file, "utf8")),
    ];
    const make = (allowInternal: boolean) =>
      new Agent({
        connect: {
          ca,
          timeout: options.connectTimeoutMs,
          lookup: guardedLookup(lowerKeys(options.resolve), allowInternal),
        },
        headersTimeout: options.headersTimeoutMs,
        bodyTimeout: options.bodyTimeoutMs,
        keepAliveTimeout: 30_000,
      });
    this.guarded = make(false);
    this.named = make(true);
  }

  agent(allowInternal: boolean): Agent {
    return allowInternal ? this.named : this.guarded;
  }

  async close(): Promise<void> {
    await Promise.all([this.guarded.close(), this.named.close()]);
  }
}

function lowerKeys(map: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(map).map(([key, value]) => [key.toLowerCase(), value]));
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
