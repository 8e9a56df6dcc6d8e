import type { Socket } from "node:net";
import { connect as netConnect } from "node:net";
import { grantNamesHost } from "../judging/judge.ts";
import { denied, writeRawRefusal } from "../judging/refusals.ts";
import type { RequestFacts } from "../judging/request-facts.ts";
import type { GatewayTimeouts } from "../settings/defaults.ts";
import { spliceSockets } from "../upstream/splice.ts";
import { guardedLookup, literalRefusal } from "../upstream/ssrf.ts";
import { type AdmissionDeps, upstreamFailure } from "./admission.ts";

/**
 * A CONNECT a grant lets through unread (verdict `tunnel`): the upstream is
 * reached by the guarded lookup (no internal address, no closed host port,
 * a literal address only where the grant names it), the two sockets are
 * spliced, and the one audit line is held open until either side ends.
 */
export interface TunnelDeps extends Pick<AdmissionDeps, "audit" | "closed"> {
  resolve: Record<string, string>;
  timeouts: GatewayTimeouts;
}

export async function pipeTunnel(
  deps: TunnelDeps,
  socket: Socket,
  head: Buffer,
  target: { host: string; port: number },
  facts: RequestFacts,
  grant: { name: string; match?: { host?: string | string[] } },
): Promise<void> {
  const ruleName = grant.name;
  const line = deps.audit.line(facts);
  const named = grantNamesHost(grant, target.host);
  const literal = literalRefusal(target.host, named);
  if (literal) {
    line.write({ verdict: "deny", rule: ruleName, status: 403, note: literal.message });
    writeRawRefusal(
      socket,
      denied(ruleName, literal.message, "denied by gateway (internal address)"),
    );
    return;
  }
  const upstream = netConnect({
    host: target.host,
    port: target.port,
    // by the address connected to: a name resolving to this host can't reach roster's own ports
    lookup: guardedLookup(deps.resolve, named, deps.closed.at(target.port)),
  });
  const connected = await new Promise<Error | undefined>((resolve) => {
    const timer = setTimeout(() => resolve(new Error("connect timeout")), deps.timeouts.connectMs);
    upstream.once("connect", () => {
      clearTimeout(timer);
      resolve(undefined);
    });
    upstream.once("error", (error) => {
      clearTimeout(timer);
      resolve(error);
    });
    socket.once("close", () => {
      clearTimeout(timer);
      resolve(new Error("the box left before the tunnel opened"));
    });
  });
  upstream.on("error", () => upstream.destroy());
  if (connected || socket.destroyed) {
    upstream.destroy();
    const error = connected ?? new Error("box gone");
    writeRawRefusal(socket, upstreamFailure(line, error, ruleName, "tunnel"));
    return;
  }
  line.hold({ verdict: "tunnel", rule: ruleName, status: 200 });
  socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
  if (head.length) upstream.write(head);
  const ended = await spliceSockets(socket, upstream, deps.timeouts.idleMs);
  line.finish({
    outcome: !ended.error ? "complete" : ended.endedBy === "box" ? "aborted" : "truncated",
    bytes: ended.toBox,
    ...(ended.endedBy === "idle" ? { note: `idle for ${deps.timeouts.idleMs} ms` } : {}),
  });
}
