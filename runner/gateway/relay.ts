import type { IncomingMessage, ServerResponse } from "node:http";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { TransferOutcome } from "./audit.ts";

/**
 * Streams an upstream response body to the box. `pipeline` ties the two ends
 * together: when the box hangs up, the upstream response (and its socket) is
 * destroyed at once; when the upstream fails mid-body, the box's response is
 * destroyed so the box sees the cut (a short Content-Length, or a chunked body
 * with no terminator), never a clean end. Back-pressure pauses the upstream
 * socket; nothing is buffered beyond the streams' own high-water marks.
 *
 * The idle clock runs only while the gateway waits for the upstream: when the
 * box is the slow side (its socket is full), silence upstream is ours, not
 * theirs. A box that stops reading altogether is cut by its own socket's idle
 * timeout, which ends this pipeline too.
 */
export interface Transfer {
  outcome: TransferOutcome;
  bytes: number;
  note?: string;
}

export async function relayBody(
  response: IncomingMessage,
  res: ServerResponse,
  idleMs: number,
  /** Called once, as soon as the outcome is known (before the last bytes go to the box when whole). */
  settle: (transfer: Transfer) => void,
  /** Sees each body chunk as it goes to the box (the usage meter); must not throw. */
  observe?: (chunk: Buffer) => void,
): Promise<Transfer> {
  let bytes = 0;
  // whichever side failed first decides the outcome; the pipeline then tears down the other
  let cause: "upstream" | "idle" | "box" | undefined;
  response.once("error", () => {
    cause ??= "upstream";
  });
  res.once("close", () => {
    if (!res.writableFinished) cause ??= "box";
  });
  const timer = setTimeout(function check() {
    if (res.writableNeedDrain) {
      timer.refresh();
      return;
    }
    cause ??= "idle";
    response.destroy(new Error(`no body bytes from upstream for ${idleMs} ms`));
  }, idleMs);
  const meter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      bytes += chunk.length;
      observe?.(chunk);
      timer.refresh();
      callback(null, chunk);
    },
    flush(callback) {
      clearTimeout(timer);
      settle({ outcome: "complete", bytes });
      callback();
    },
  });
  try {
    await pipeline(response, meter, res);
    return { outcome: "complete", bytes };
  } catch (error) {
    clearTimeout(timer);
    response.destroy();
    res.destroy();
    const transfer: Transfer =
      cause === "box"
        ? { outcome: "aborted", bytes, note: "the box closed the connection mid-response" }
        : {
            outcome: "truncated",
            bytes,
            note:
              cause === "idle"
                ? `upstream went silent mid-body (${idleMs} ms)`
                : `upstream ended mid-body: ${describe(error)}`,
          };
    settle(transfer);
    return transfer;
  }
}

function describe(error: unknown): string {
  const { code, message } = error as { code?: string; message?: string };
  return [code, message].filter(Boolean).join(" ") || String(error);
}
