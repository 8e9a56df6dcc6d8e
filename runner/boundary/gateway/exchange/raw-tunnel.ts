import type { Socket } from "node:net";
import { grantNamesHost } from "../judging/judge.ts";
import { denied, writeRawRefusal } from "../judging/refusals.ts";
import type { RequestFacts } from "../judging/request-facts.ts";
import type { GatewayTimeouts } from "../settings/defaults.ts";
import type { Upstreams } from "../upstream/pools.ts";
import { spliceSockets } from "../upstream/splice.ts";
import { literalRefusal } from "../upstream/ssrf.ts";
import { type AdmissionDeps, upstreamFailure } from "./admission.ts";

/**
 * A CONNECT a grant lets through unread (verdict `tunnel`): the upstream is
 * reached by the guarded lookup (no internal address, no closed host port,
 * a literal address only where the grant names it), through the parent proxy
 * when there is one, the two sockets are spliced, and the one audit line is
 * held open until either side ends.
 */
export interface TunnelDeps extends Pick<AdmissionDeps, "audit"> {
  upstreams: Upstreams;
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
  // by the address connected to: a name resolving to this host can't reach roster's own ports
  const dialed = deps.upstreams.dial(target, named);
  const connected = await new Promise<{ upstream: Socket } | { error: Error }>((resolve) => {
    dialed.then(
      (upstream) => resolve({ upstream }),
      (error: unknown) =>
        resolve({ error: error instanceof Error ? error : new Error(String(error)) }),
    );
    socket.once("close", () =>
      resolve({ error: new Error("the box left before the tunnel opened") }),
    );
  });
  // a dial that finishes after the box left is closed, never left open
  if ("error" in connected)
    void dialed.then(
      (late) => late.destroy(),
      () => undefined,
    );
  const upstream = "upstream" in connected ? connected.upstream : undefined;
  upstream?.on("error", () => upstream.destroy());
  if (!upstream || socket.destroyed) {
    upstream?.destroy();
    const error = "error" in connected ? connected.error : new Error("box gone");
    writeRawRefusal(socket, upstreamFailure(line, error, ruleName, "tunnel"));
    return;
  }
  line.hold({ verdict: "tunnel", rule: ruleName, status: 200 });
  socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
  if (head.length) upstream.write(head);
  const splicing = spliceSockets(socket, upstream, deps.timeouts.idleMs);
  // dialed paused: it flows once the splice listens
  upstream.resume();
  const ended = await splicing;
  line.finish({
    outcome: !ended.error ? "complete" : ended.endedBy === "box" ? "aborted" : "truncated",
    bytes: ended.toBox,
    ...(ended.endedBy === "idle" ? { note: `idle for ${deps.timeouts.idleMs} ms` } : {}),
  });
}
