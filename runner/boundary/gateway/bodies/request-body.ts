import type { IncomingMessage } from "node:http";
import { PassThrough } from "node:stream";

/**
 * A request body, bounded by `[gateway] max_body_bytes`: read whole for a rule
 * that needs it (readBody), or streamed upstream (streamBody).
 * A declared Content-Length over the limit is refused from the header alone,
 * before a byte of the body is read; a chunked body is refused the moment it
 * crosses the limit. Either way the caller answers 413 and closes the
 * connection after a bounded linger (refusal.ts), so the box reads why.
 */
export type BodyRead =
  | { kind: "body"; body: Buffer }
  | { kind: "too-large"; size: number }
  /** `reserve` said no: the bytes held for judging are at a bound (budget.ts). */
  | { kind: "over-budget"; size: number }
  | { kind: "aborted" };

export function declaredLength(req: IncomingMessage): number | undefined {
  const header = req.headers["content-length"];
  if (header === undefined || !/^\d+$/.test(header)) return undefined;
  return Number(header);
}

/**
 * Reads the whole body, asking `reserve` for its bytes before holding them:
 * all at once when the length is declared (one buffer of that size, no second
 * copy), else chunk by chunk.
 */
export async function readBody(
  req: IncomingMessage,
  max: number,
  reserve: (bytes: number) => boolean,
): Promise<BodyRead> {
  const declared = declaredLength(req);
  if (declared !== undefined && declared > max) return { kind: "too-large", size: declared };
  if (declared !== undefined && declared > 0 && !reserve(declared)) {
    return { kind: "over-budget", size: declared };
  }
  const whole = declared !== undefined ? Buffer.allocUnsafe(declared) : undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  return new Promise((resolve) => {
    const done = (result: BodyRead) => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("close", onClose);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        req.pause();
        done({ kind: "too-large", size });
        return;
      }
      if (whole) {
        chunk.copy(whole, size - chunk.length);
      } else if (!reserve(chunk.length)) {
        req.pause();
        done({ kind: "over-budget", size });
      } else chunks.push(chunk);
    };
    const onEnd = () =>
      done({ kind: "body", body: whole ? whole.subarray(0, size) : Buffer.concat(chunks) });
    const onClose = () => done({ kind: "aborted" });
    req.on("data", onData);
    req.once("end", onEnd);
    req.once("close", onClose);
    req.once("error", () => done({ kind: "aborted" }));
  });
}

/**
 * The body as a stream for the upstream (its length declared and within the
 * limit). Back-pressure holds the box's socket, so nothing is held here beyond
 * the streams' own buffers; a box that leaves mid-upload cuts the upstream
 * request too.
 */
export function streamBody(req: IncomingMessage): PassThrough {
  const stream = new PassThrough();
  req.pipe(stream);
  req.once("close", () => {
    if (!req.complete) stream.destroy(new Error("the box left mid-upload"));
  });
  return stream;
}
