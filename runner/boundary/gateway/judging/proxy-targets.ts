import type { IncomingMessage } from "node:http";
import { isIP } from "node:net";
import { hostName } from "../../../ground/config/host-name.ts";
import type { Target } from "./request-facts.ts";

/**
 * Where a request at the proxy's outer socket says it is going: a CONNECT's
 * `host:port`, or an absolute-form `http://` URL. Parsed once, strictly: a
 * target that isn't one of these is refused, never guessed at.
 */
/** `host:port` (IPv6 in brackets); undefined when malformed. */
export function parseConnectTarget(raw: string): { host: string; port: number } | undefined {
  const match = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})$/.exec(raw);
  if (!match?.[1] || !match[2]) return undefined;
  const port = Number(match[2]);
  if (port < 1 || port > 65535) return undefined;
  const host = match[1].startsWith("[") ? match[1].slice(1, -1) : match[1];
  if (match[1].startsWith("[") && isIP(host) !== 6) return undefined;
  return { host: hostName(host), port };
}

/** Where a plain request was going, when its URL says. */
export function whereOf(
  req: IncomingMessage,
  absolute: { target: Target; path: string } | undefined,
): { target: Target; method?: string | undefined; rawPath: string } | undefined {
  return absolute && { target: absolute.target, method: req.method, rawPath: absolute.path };
}

export function parseAbsolute(url: string): { target: Target; path: string } | undefined {
  if (!/^http:\/\//i.test(url)) return undefined;
  try {
    const parsed = new URL(url);
    const host = hostName(parsed.hostname);
    return {
      target: { protocol: "http", host, port: Number(parsed.port || 80) },
      path: `${parsed.pathname}${parsed.search}`,
    };
  } catch {
    return undefined;
  }
}
