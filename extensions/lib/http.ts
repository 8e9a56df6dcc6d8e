/**
 * Box-side HTTP for tools: every request goes out through the box's proxy
 * (the gateway), with limits a hostile page can't get around — a deadline that
 * also honours the tool's abort signal, bounded redirects, a cap on body bytes
 * and the same cap after decompression (no gzip bombs). Nothing here enforces
 * policy; the gateway does. This only keeps a tool from hanging or drowning.
 */

import type { Transform } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { type Dispatcher, EnvHttpProxyAgent, request } from "undici";

export interface FetchLimits {
  timeoutMs: number;
  maxBytes: number;
  maxRedirects: number;
  signal?: AbortSignal | undefined;
  headers?: Record<string, string>;
}

export const DEFAULT_LIMITS: FetchLimits = {
  timeoutMs: 20_000,
  maxBytes: 5 * 1024 * 1024,
  maxRedirects: 5,
};

export interface Fetched {
  url: string;
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** The body was cut at maxBytes (before or after decompression). */
  truncated: boolean;
  /** The deadline passed while reading; the body is what arrived before it. */
  timedOut: boolean;
}

export class FetchFailure extends Error {
  constructor(
    message: string,
    readonly url: string,
  ) {
    super(message);
  }
}

let proxyAgent: Dispatcher | undefined;
/** The dispatcher honouring HTTP(S)_PROXY: in a box, always the gateway. */
export function proxyDispatcher(): Dispatcher {
  proxyAgent ??= new EnvHttpProxyAgent();
  return proxyAgent;
}

const USER_AGENT =
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) roster-web/1.0 Safari/537.36";

function flatten(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined)
      out[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value;
  }
  return out;
}

function decoderFor(encoding: string | undefined): Transform | undefined {
  switch ((encoding ?? "").trim().toLowerCase()) {
    case "gzip":
    case "x-gzip":
      return createGunzip();
    case "deflate":
      return createInflate();
    case "br":
      return createBrotliDecompress();
    default:
      return undefined;
  }
}

/**
 * Reads a stream into `chunks`, at most `maxBytes`; stops early (and says so)
 * instead of buffering more. The caller owns `chunks`, so what arrived before a
 * timeout is still there.
 */
async function readCapped(
  stream: AsyncIterable<Buffer>,
  maxBytes: number,
  chunks: Buffer[],
): Promise<boolean> {
  let size = 0;
  for await (const chunk of stream) {
    const room = maxBytes - size;
    if (chunk.length >= room) {
      chunks.push(chunk.subarray(0, room));
      return true;
    }
    chunks.push(chunk);
    size += chunk.length;
  }
  return false;
}

export async function fetchWithLimits(
  url: string,
  limits: FetchLimits = DEFAULT_LIMITS,
  dispatcher: Dispatcher = proxyDispatcher(),
): Promise<Fetched> {
  const deadline = AbortSignal.timeout(limits.timeoutMs);
  const signal = limits.signal ? AbortSignal.any([limits.signal, deadline]) : deadline;
  const seen = new Set<string>();
  let current = url;
  for (let hop = 0; ; hop++) {
    if (seen.has(current)) throw new FetchFailure(`redirect loop at ${current}`, url);
    seen.add(current);
    let response: Dispatcher.ResponseData;
    try {
      response = await request(current, {
        dispatcher,
        method: "GET",
        signal,
        headers: {
          "user-agent": USER_AGENT,
          accept:
            "text/html,application/xhtml+xml,application/json,text/plain;q=0.9,application/pdf;q=0.8,*/*;q=0.5",
          "accept-encoding": "gzip, deflate, br",
          ...limits.headers,
        },
      });
    } catch (error) {
      if (deadline.aborted)
        throw new FetchFailure(`timed out after ${Math.round(limits.timeoutMs / 1000)} s`, url);
      if (limits.signal?.aborted) throw new FetchFailure("cancelled", url);
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new FetchFailure(cause?.code ?? cause?.message ?? (error as Error).message, url);
    }
    const headers = flatten(response.headers);
    if (response.statusCode >= 300 && response.statusCode < 400 && headers.location) {
      await response.body.dump().catch(() => undefined);
      if (hop >= limits.maxRedirects)
        throw new FetchFailure(`more than ${limits.maxRedirects} redirects`, url);
      current = new URL(headers.location, current).toString();
      continue;
    }
    const decoder = decoderFor(headers["content-encoding"]);
    if (decoder) {
      response.body.on("error", (error) => decoder.destroy(error));
      response.body.pipe(decoder);
    }
    const source: AsyncIterable<Buffer> = decoder ?? response.body;
    const chunks: Buffer[] = [];
    const page = (truncated: boolean, timedOut: boolean): Fetched => ({
      url: current,
      status: response.statusCode,
      headers,
      body: Buffer.concat(chunks),
      truncated,
      timedOut,
    });
    try {
      const truncated = await readCapped(source, limits.maxBytes, chunks);
      if (truncated) {
        response.body.destroy();
        decoder?.destroy();
      }
      return page(truncated, false);
    } catch (error) {
      response.body.destroy();
      decoder?.destroy();
      if (deadline.aborted || limits.signal?.aborted) return page(false, true);
      if (chunks.length) return page(true, false);
      throw new FetchFailure(`reading the body failed: ${(error as Error).message}`, url);
    }
  }
}

/** A gateway refusal in words a model acts on (and stops retrying), or undefined if this isn't one. */
export function gatewayRefusal(fetched: Fetched): string | undefined {
  const verdict = fetched.headers["x-roster-verdict"];
  if (!verdict) return undefined;
  let body: { hint?: string; detail?: string; error?: string } = {};
  try {
    body = JSON.parse(fetched.body.toString("utf8")) as typeof body;
  } catch {
    // a refusal without a JSON body still has its headers
  }
  const rule = fetched.headers["x-roster-rule"];
  if (verdict === "budget") {
    return `over budget (${body.detail ?? "limit reached"}); retry after ${fetched.headers["retry-after"] ?? "?"} s — retrying sooner won't help`;
  }
  if (verdict === "credential-outage")
    return `the credential for this host is not available (${body.hint ?? "ask the operator"})`;
  return `denied by policy${rule ? ` (rule ${rule})` : ""}: ${body.hint ?? body.error ?? "the gateway refused this request"} — don't retry this URL`;
}
