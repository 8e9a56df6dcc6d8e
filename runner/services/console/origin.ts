import { isIP } from "node:net";
import type { MiddlewareHandler } from "hono";
import { hostName } from "../../ground/config/host-name.ts";
import type { ConsoleEnv } from "./env.ts";
import { plain } from "./html.ts";

/**
 * The console's session belongs to its own origin. A browser sends a
 * cookie to every port of its host, so any other service on 127.0.0.1 that
 * the person's browser opens (another local user's, say) receives the
 * console's cookie and can replay it; and a name an attacker controls can be
 * re-pointed at 127.0.0.1 (DNS rebinding) to make the browser talk to the
 * console as that name's own site. So a session is two halves (key.ts,
 * session.ts): the cookie, and a token for that session alone that lives in
 * the console's origin's storage — which no other port's page can read, and
 * which the browser never sends anywhere by itself — and goes out only in a
 * header the console's script sets or a form the console served. The cookie
 * alone gets a page with no data in it; with another session's token it gets
 * a refusal. Besides, the cookie's name carries the port (consoles on other
 * ports, or a service there, can't set or shadow it), its value is MACed for
 * this port alone (another port's cookie does not log in here), and every
 * request must name the console's own address and port in its Host header,
 * which a rebound name can't.
 */
export interface ConsolePlace {
  /** The address the console listens on, as configured. */
  host: string;
  port: number;
}

/** The session cookie's name: one per console port. */
export function cookieName(port: number): string {
  return `roster_console_${port}`;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;
const WILDCARD = new Set(["0.0.0.0", "::"]);

/**
 * Whether a Host header names this console (or the metrics listener, which
 * keeps the same rule): its own address and port; for a loopback or wildcard
 * listener `localhost` too (browsers keep that name on loopback), and for one
 * listening as `localhost` the loopback literals; for a wildcard listener any
 * address literal (rebinding needs a name, so a literal is always the host it
 * says).
 */
export function hostNamesConsole(header: string | undefined, place: ConsolePlace): boolean {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(header?.trim() ?? "");
  // a browser leaves out port 80 (the only default a plain-http console has)
  if (!match?.[1] || Number(match[2] ?? 80) !== place.port) return false;
  const named = hostName(match[1]);
  const own = hostName(place.host);
  if (named === own) return true;
  if (named === "localhost" && (LOOPBACK.test(own) || WILDCARD.has(own))) return true;
  // a listener named localhost is on loopback: its literals name it too
  if (own === "localhost" && LOOPBACK.test(named)) return true;
  return WILDCARD.has(own) && isIP(named) !== 0;
}

/** Refuses, before anything else, a request whose Host is not this console's. */
export function hostGuard(place: () => ConsolePlace): MiddlewareHandler<ConsoleEnv> {
  return async (c, next) => {
    const where = place();
    const header = c.req.header("host");
    if (hostNamesConsole(header, where)) return next();
    const shown = where.host.includes(":") ? `[${where.host}]` : where.host;
    return c.html(
      plain(
        "Wrong address",
        `This console answers at ${shown}:${where.port} only; the request named ${JSON.stringify(header ?? "")} (Host header).`,
      ),
      421,
    );
  };
}
