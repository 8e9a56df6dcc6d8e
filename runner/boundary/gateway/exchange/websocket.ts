import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { Identity } from "../doors/identity.ts";
import { denied, writeRawRefusal } from "../judging/refusals.ts";
import type { Target } from "../judging/request-facts.ts";
import { spliceSockets } from "../upstream/splice.ts";
import { admit, refusalOutcome, requestFactsOf, upstreamFailure } from "./admission.ts";
import { type ExchangeDeps, forwardHeaders } from "./exchange.ts";

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
  const facts = requestFactsOf(req, { target, identity, rawPath }, 0);
  const line = deps.audit.line(facts);
  const ruling = await admit(deps, facts, "upgrade", Buffer.alloc(0));
  if (ruling.kind !== "forward") return refuseUpgrade(ruling, line, socket);
  const ruleName = ruling.decision.rule?.name;
  const headers = forwardHeaders(req.headers, ruling.inject);
  headers.connection = "Upgrade";
  headers.upgrade = String(req.headers.upgrade ?? "websocket");
  let reply: Reply;
  try {
    reply = await deps.upstreams.send(target, ruling.allowInternal, {
      method: "GET",
      path: rawPath || "/",
      headers,
      body: undefined,
    });
  } catch (error) {
    writeRawRefusal(socket, upstreamFailure(line, error, ruleName));
    return;
  }
  if (reply.kind === "response") return declined(reply.response, line, socket, ruleName);
  line.hold({
    verdict: "allow",
    rule: ruleName,
    status: 101,
    spend: ruling.spend,
    injected: [...ruling.inject.keys()],
    ...(ruling.note ? { note: ruling.note } : {}),
  });
  if (socket.destroyed) {
    reply.socket.destroy();
    line.finish({ outcome: "aborted", bytes: 0, note: "the box left during the handshake" });
    return;
  }
  await splice(socket, head, reply, line);
}

type Reply = Awaited<ReturnType<ExchangeDeps["upstreams"]["send"]>>;
type Ruling = Awaited<ReturnType<typeof admit>>;
type Line = ReturnType<ExchangeDeps["audit"]["line"]>;

/** Refused by the rules, or aimed at the action host, which is answered by plain requests only. */
function refuseUpgrade(
  ruling: Exclude<Ruling, { kind: "forward" }>,
  line: Line,
  socket: Duplex,
): void {
  const refused =
    ruling.kind === "refuse"
      ? ruling
      : {
          kind: "refuse" as const,
          refusal: denied(undefined, "the action host speaks plain HTTPS, not WebSocket"),
          decision: undefined,
        };
  line.write(refusalOutcome(refused));
  writeRawRefusal(socket, refused.refusal);
}

/** The upstream declined the upgrade: its status is passed on, without a body. */
function declined(
  response: IncomingMessage,
  line: Line,
  socket: Duplex,
  ruleName: string | undefined,
): void {
  const status = response.statusCode ?? 502;
  response.destroy();
  line.write({ verdict: "allow", rule: ruleName, status, note: "upstream refused the upgrade" });
  writeRawRefusal(socket, {
    status: 502,
    body: {
      error: `upstream: answered ${status} instead of switching protocols`,
      rule: ruleName ?? null,
    },
  });
}

/** The upstream's 101 to the box, then both sockets spliced until either ends. */
async function splice(
  socket: Duplex,
  head: Buffer,
  reply: Extract<Reply, { kind: "upgrade" }>,
  line: Line,
): Promise<void> {
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
