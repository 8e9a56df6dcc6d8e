import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { upgrade } from "undici";
import { ACTIONS_HOST } from "./action-host.ts";
import {
  bracket,
  buildFacts,
  type ExchangeDeps,
  forwardHeaders,
  recordRefusal,
  rule,
  type Target,
  upstreamRefusal,
} from "./exchange.ts";
import type { Identity } from "./identity.ts";
import { denied, writeRawRefusal } from "./refusals.ts";

/**
 * WebSocket upgrades: judged on the handshake like any request (body size 0),
 * replayed upstream with injection through the same guarded pools, then the
 * two sockets are piped both ways.
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
  const facts = buildFacts(req, target, identity, rawPath, Buffer.alloc(0));
  if (facts.host === ACTIONS_HOST) {
    writeRawRefusal(socket, denied(undefined, "the action host speaks plain HTTPS, not WebSocket"));
    return;
  }
  const ruling = rule(deps, facts, Buffer.alloc(0));
  if (ruling.kind === "refuse") {
    recordRefusal(deps, facts, ruling);
    writeRawRefusal(socket, ruling.refusal);
    return;
  }
  const ruleName = ruling.decision.rule?.name;
  const headers = forwardHeaders(req.headers, ruling.inject);
  // undici writes the Connection/Upgrade pair itself from `protocol`
  try {
    const upstream = await upgrade(
      `${target.protocol}://${bracket(target.host)}:${target.port}${rawPath || "/"}`,
      {
        dispatcher: deps.upstreams.agent(ruling.allowInternal),
        method: "GET",
        headers,
        protocol: String(req.headers.upgrade ?? "websocket"),
      },
    );
    deps.audit.record(facts, {
      verdict: "allow",
      rule: ruleName,
      status: 101,
      spend: ruling.spend,
      injected: [...ruling.inject.keys()],
    });
    const lines = ["HTTP/1.1 101 Switching Protocols"];
    for (const [name, value] of Object.entries(upstream.headers)) {
      for (const one of Array.isArray(value) ? value : [value]) {
        if (one !== undefined) lines.push(`${name}: ${one}`);
      }
    }
    socket.write(`${lines.join("\r\n")}\r\n\r\n`);
    if (head.length) upstream.socket.write(head);
    upstream.socket.pipe(socket);
    socket.pipe(upstream.socket);
    const close = () => {
      upstream.socket.destroy();
      socket.destroy();
    };
    upstream.socket.on("error", close);
    socket.on("error", close);
    upstream.socket.on("close", close);
    socket.on("close", close);
  } catch (error) {
    const refusal = upstreamRefusal(error, ruleName);
    deps.audit.record(facts, {
      verdict: refusal.status === 403 ? "deny" : "allow",
      rule: ruleName,
      status: refusal.status,
      note: String(refusal.body.error),
    });
    writeRawRefusal(socket, refusal);
  }
}
