import type { IncomingMessage, ServerResponse } from "node:http";
import type { TransferOutcome } from "../audit/audit.ts";

/**
 * Streams an upstream response body to the box, the two ends tied together:
 * when the box hangs up, the upstream response (and its socket) is
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

export function relayBody(
  response: IncomingMessage,
  res: ServerResponse,
  idleMs: number,
  /** Called once, as soon as the outcome is known (before the last bytes go to the box when whole). */
  settle: (transfer: Transfer) => void,
  /** Sees each body chunk as it goes to the box (the usage meter); must not throw. */
  observe?: (chunk: Buffer) => void,
): Promise<Transfer> {
  // Plain listeners rather than stream.pipeline: the same ties both ways, without the
  // AbortController, DOMException and end-of-stream watchers pipeline builds per response
  return new Promise<Transfer>((resolve) => {
    let bytes = 0;
    let settled = false;
    let resolved = false;
    const conclude = (transfer: Transfer) => {
      if (!settled) {
        settled = true;
        settle(transfer);
      }
      if (!resolved) {
        resolved = true;
        clearTimeout(timer);
        response.off("data", onData);
        res.off("drain", onDrain);
        resolve(transfer);
      }
    };
    // whichever side failed first decides the outcome; the other side is torn down
    const cut = (transfer: Transfer) => {
      if (resolved) return;
      conclude(transfer);
      response.destroy();
      res.destroy();
    };
    const timer = setTimeout(function check() {
      if (res.writableNeedDrain) {
        timer.refresh();
        return;
      }
      cut({ outcome: "truncated", bytes, note: `upstream went silent mid-body (${idleMs} ms)` });
    }, idleMs);
    const onDrain = () => response.resume();
    const onData = (chunk: Buffer) => {
      bytes += chunk.length;
      observe?.(chunk);
      timer.refresh();
      if (!res.write(chunk)) response.pause();
    };
    response.on("data", onData);
    res.on("drain", onDrain);
    response.once("end", () => {
      if (resolved) return;
      if (!response.complete) {
        cut({ outcome: "truncated", bytes, note: "upstream ended mid-body: aborted" });
        return;
      }
      // whole: the line can be written while the last bytes go out
      clearTimeout(timer);
      const transfer: Transfer = { outcome: "complete", bytes };
      settled = true;
      settle(transfer);
      res.end(() => conclude(transfer));
    });
    response.once("error", (error) =>
      cut({ outcome: "truncated", bytes, note: `upstream ended mid-body: ${describe(error)}` }),
    );
    res.once("close", () => {
      if (res.writableFinished) {
        conclude({ outcome: "complete", bytes });
        return;
      }
      cut({ outcome: "aborted", bytes, note: "the box closed the connection mid-response" });
    });
  });
}

function describe(error: unknown): string {
  const { code, message } = error as { code?: string; message?: string };
  return [code, message].filter(Boolean).join(" ") || String(error);
}
