import type { IncomingMessage } from "node:http";
import { denied, type Refusal, rawRefusal } from "../judging/refusals.ts";
import type { BodyBound } from "./budget.ts";

/**
 * Refusing a request whose body is still on its way (too large, or past the
 * bytes the gateway may hold), so that the box reads why. Closing at once
 * would reset a client still uploading before it reads the answer; instead
 * the refusal is written, the rest of the upload is read and thrown away for a
 * bounded time and byte count (a lingering close, as nginx does), and the
 * connection is closed when the box has stopped sending, has finished, or has
 * had its bounds.
 */
export const LINGER_MAX_MS = 10_000;
/** Silence that ends the linger early: a box that read the refusal stops sending. */
export const LINGER_IDLE_MS = 2_000;
export const LINGER_MAX_BYTES = 256 * 1024 * 1024;

/** How long a box is told to wait before it sends a body again when the gateway holds too much. */
const RETRY_AFTER_SECS = 2;

export function tooLargeRefusal(max: number): Refusal {
  const refusal = denied(
    undefined,
    `request bodies over ${max} bytes are refused; send less per request`,
    "request body too large",
  );
  refusal.status = 413;
  return refusal;
}

export function overBudgetRefusal(bound: BodyBound, perBox: number, overall: number): Refusal {
  const mib = (bytes: number) => `${Math.round(bytes / 1024 / 1024)} MiB`;
  return {
    status: 503,
    retryAfterSeconds: RETRY_AFTER_SECS,
    body: {
      error: "the gateway is holding as many request bodies as it may",
      detail:
        bound === "box"
          ? `this run's bodies held for judging would pass ${mib(perBox)}`
          : `all runs' bodies held for judging would pass ${mib(overall)}`,
      hint: `send fewer large requests at once; retry after ${RETRY_AFTER_SECS} s`,
      retry_after_secs: RETRY_AFTER_SECS,
    },
  };
}

/**
 * Writes `refusal` (Connection: close) and lingers: reads and discards what
 * the box still sends, then closes. The request must not have been answered.
 */
export function refuseAndLinger(req: IncomingMessage, refusal: Refusal): void {
  const socket = req.socket;
  if (socket.destroyed) return;
  // written on the socket, not through the response: Node would close the
  // connection as soon as the response is out, resetting a box still uploading
  socket.write(rawRefusal(refusal));
  let discarded = 0;
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    clearTimeout(deadline);
    clearTimeout(idle);
    req.off("data", onData);
    // the refusal goes out first; a peer that never reads it can't hold the socket
    socket.end(() => socket.destroy());
    setTimeout(() => socket.destroy(), LINGER_IDLE_MS).unref();
  };
  const deadline = setTimeout(close, LINGER_MAX_MS);
  const idle = setTimeout(close, LINGER_IDLE_MS);
  const onData = (chunk: Buffer) => {
    discarded += chunk.length;
    idle.refresh();
    if (discarded > LINGER_MAX_BYTES) close();
  };
  req.on("data", onData);
  req.once("end", close);
  socket.once("close", close);
  req.resume();
}
