import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { ACTIONS_HOST } from "./action-host.ts";
import {
  buildFacts,
  type ExchangeDeps,
  forwardHeaders,
  refusalOutcome,
  rule,
  type Target,
  upstreamRefusal,
} from "./exchange.ts";
import type { Identity } from "./identity.ts";
import { denied, writeRawRefusal } from "./refusals.ts";
import { spliceSockets } from "./splice.ts";

/**
 * WebSocket upgrades: judged on the handshake like any request (body size 0),
 * replayed upstream with injection through the same guarded pools, then the
 * two sockets are spliced both ways until either side ends. The audit line is
 * written when the connection ends, with the bytes that reached the box.
 */
export async function handleUpgrade(
  deps: ExchangeDeps,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  target: Target,
  identity: Identity | undefined,
  rawPath: string,
): Promise<void> {
  socket.on("error", () => socket.destroy());
  const facts = buildFacts(req, target, identity, rawPath, 0);
  if (facts.host === ACTIONS_HOST) {
    writeRawRefusal(socket, denied(undefined, "the action host speaks plain HTTPS, not WebSocket"));
    return;
  }
  const line = deps.audit.line(facts);
  const ruling = rule(deps, facts, Buffer.alloc(0));
  if (ruling.kind === "refuse") {
    line.write(refusalOutcome(ruling));
    writeRawRefusal(socket, ruling.refusal);
    return;
  }
  const ruleName = ruling.decision.rule?.name;
  const headers = forwardHeaders(req.headers, ruling.inject);
  headers.connection = "Upgrade";
  headers.upgrade = String(req.headers.upgrade ?? "websocket");
  let reply: Awaited<ReturnType<ExchangeDeps["upstreams"]["send"]>>;
  try {
    reply = await deps.upstreams.send(target, ruling.allowInternal, {
      method: "GET",
      path: rawPath || "/",
      headers,
      body: undefined,
    });
  } catch (error) {
    const refusal = upstreamRefusal(error, ruleName);
    line.write({
      verdict: refusal.status === 403 ? "deny" : "allow",
      rule: ruleName,
      status: refusal.status,
      note: String(refusal.body.error),
    });
    writeRawRefusal(socket, refusal);
    return;
  }
  if (reply.kind === "response") {
    // the upstream declined the upgrade: pass its status on, without a body
    const status = reply.response.statusCode ?? 502;
    reply.response.destroy();
    line.write({ verdict: "allow", rule: ruleName, status, note: "upstream refused the upgrade" });
    writeRawRefusal(socket, {
      status: 502,
      body: {
        error: `upstream: answered ${status} instead of switching protocols`,
        rule: ruleName ?? null,
      },
    });
    return;
  }
  line.hold({
    verdict: "allow",
    rule: ruleName,
    status: 101,
    spend: ruling.spend,
    injected: [...ruling.inject.keys()],
  });
  if (socket.destroyed) {
    reply.socket.destroy();
    line.finish({ outcome: "aborted", bytes: 0, note: "the box left during the handshake" });
    return;
  }
  const lines = ["HTTP/1.1 101 Switching Protocols"];
  const raw = reply.response.rawHeaders;
  for (let index = 0; index + 1 < raw.length; index += 2)
    lines.push(`${raw[index]}: ${raw[index + 1]}`);
  socket.write(`${lines.join("\r\n")}\r\n\r\n`);
  if (reply.head.length) socket.write(reply.head);
  if (head.length) reply.socket.write(head);
  // a WebSocket may be quiet for long stretches: the box socket's own idle timeout bounds it
  const ended = await spliceSockets(socket, reply.socket);
  line.finish({
    outcome: !ended.error ? "complete" : ended.endedBy === "upstream" ? "truncated" : "aborted",
    bytes: ended.toBox,
  });
}
