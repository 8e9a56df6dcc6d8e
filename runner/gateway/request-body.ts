import type { IncomingMessage } from "node:http";

/**
 * Reads a request body for judging, bounded by `[gateway] max_body_bytes`.
 * A declared Content-Length over the limit is refused from the header alone,
 * before a byte of the body is read; a chunked body is refused the moment it
 * crosses the limit. Either way the caller answers 413 and closes the socket,
 * so a box can't make the gateway swallow an upload it already refused.
 */
export type BodyRead =
  | { kind: "body"; body: Buffer }
  | { kind: "too-large"; size: number }
  | { kind: "aborted" };

export function declaredLength(req: IncomingMessage): number | undefined {
  const header = req.headers["content-length"];
  if (header === undefined || !/^\d+$/.test(header)) return undefined;
  return Number(header);
}

export async function readBody(req: IncomingMessage, max: number): Promise<BodyRead> {
  const declared = declaredLength(req);
  if (declared !== undefined && declared > max) return { kind: "too-large", size: declared };
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
      chunks.push(chunk);
    };
    const onEnd = () => done({ kind: "body", body: Buffer.concat(chunks) });
    const onClose = () => done({ kind: "aborted" });
    req.on("data", onData);
    req.once("end", onEnd);
    req.once("close", onClose);
    req.once("error", () => done({ kind: "aborted" }));
  });
}
