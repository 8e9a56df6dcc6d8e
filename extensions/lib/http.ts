/**
 * Box-side HTTP for tools: every request goes out through the box's proxy
 * (the gateway), with limits a hostile page can't get around — a deadline that
 * also honours the tool's abort signal, bounded redirects, a cap on body bytes
 * and the same cap after decompression (no gzip bombs). Nothing here enforces
 * policy; the gateway does. This only keeps a tool from hanging or drowning.
 *
 * The transport is Node's own http/https client, not undici: undici 7 kills the
 * whole process (an assert in its HTTP/1 parser, nodejs/undici#5360) when a
 * peer closes its socket while the parser is paused under back-pressure — a
 * page that ends with FIN while we decode it would take pi down with it. The
 * fix is only in undici 8, which does not load on Node 20, where the host
 * tests import this file.
 */

import {
  type ClientRequest,
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingMessage,
  type RequestOptions,
} from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { addAbortSignal, pipeline, type Readable, type Transform } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { HttpsProxyAgent } from "https-proxy-agent";

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

const DEFAULT_PORTS: Record<string, number> = { "http:": 80, "https:": 443 };

/** Whether NO_PROXY exempts `target`, read as undici's EnvHttpProxyAgent reads it. */
function exempt(target: URL, noProxy: string): boolean {
  const entries = noProxy.split(/[,\s]/).filter(Boolean);
  if (entries.length === 0) return false;
  if (noProxy === "*") return true;
  // from `host`, not `hostname`, so an IPv6 address keeps its brackets as entries write it
  const hostname = target.host.replace(/:\d*$/, "").toLowerCase();
  const port = Number.parseInt(target.port, 10) || DEFAULT_PORTS[target.protocol] || 0;
  return entries.some((entry) => {
    const parsed = /^(.+):(\d+)$/.exec(entry);
    const host = (parsed?.[1] ?? entry).replace(/^\*?\./, "").toLowerCase();
    const entryPort = parsed?.[2] ? Number.parseInt(parsed[2], 10) : 0;
    if (entryPort && entryPort !== port) return false;
    return hostname === host || hostname.endsWith(`.${host}`);
  });
}

/**
 * The proxy `target` goes through, from the environment as undici's
 * EnvHttpProxyAgent picks it (https_proxy, HTTPS_PROXY, then the http one for
 * https://; http_proxy, HTTP_PROXY for http://; NO_PROXY honoured), or
 * undefined to go direct. In a box it is always the gateway.
 */
export function proxyFor(target: URL, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const httpProxy = env.http_proxy ?? env.HTTP_PROXY;
  const proxy =
    target.protocol === "https:" ? (env.https_proxy ?? env.HTTPS_PROXY) || httpProxy : httpProxy;
  if (!proxy || exempt(target, env.no_proxy ?? env.NO_PROXY ?? "")) return undefined;
  return proxy;
}

// Own agents, not the global ones (which Node 24 points at the proxy itself
// under NODE_USE_ENV_PROXY), and no keep-alive: each fetch owns its connection,
// so abandoning a body by destroying it never strands a pooled socket.
const direct = {
  http: new HttpAgent({ keepAlive: false }),
  https: new HttpsAgent({ keepAlive: false }),
};
const tunnels = new Map<string, HttpsProxyAgent<string>>();

/** The agent for `target`: a CONNECT tunnel through the proxy for every scheme (the gateway speaks plain HTTP inside one too), or a direct one. */
function agentFor(target: URL): HttpAgent {
  const proxy = proxyFor(target);
  if (!proxy) return target.protocol === "https:" ? direct.https : direct.http;
  let agent = tunnels.get(proxy);
  if (!agent) {
    agent = new HttpsProxyAgent(proxy);
    tunnels.set(proxy, agent);
  }
  return agent;
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

interface Exchange {
  request: ClientRequest;
  response: IncomingMessage;
}

/**
 * One GET; resolves at the response head. Aborting `signal` destroys the
 * request (and its socket) and rejects at once — also while a proxy has taken
 * the CONNECT and not answered it, when the request has no socket yet for the
 * signal to reach.
 */
function get(target: URL, headers: Record<string, string>, signal: AbortSignal): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const options: RequestOptions = { method: "GET", headers, agent: agentFor(target), signal };
    const request =
      target.protocol === "https:" ? httpsRequest(target, options) : httpRequest(target, options);
    const onAbort = () => {
      request.destroy();
      reject(signal.reason instanceof Error ? signal.reason : new Error("aborted"));
    };
    signal.addEventListener("abort", onAbort, { once: true });
    // stays attached: a socket error after the head must not go unhandled
    request.on("error", reject);
    request.once("response", (response) => {
      signal.removeEventListener("abort", onAbort);
      response.on("error", () => undefined); // surfaces through the reader instead
      resolve({ request, response });
    });
    request.end();
  });
}

/** Lets go of an exchange whose body is not read to its end, so its socket is released now. */
function release({ request, response }: Exchange): void {
  response.destroy();
  request.destroy();
}

function reason(error: unknown): string {
  const { code, message } = error as { code?: string; message?: string };
  return message || code || String(error);
}

export async function fetchWithLimits(
  url: string,
  limits: FetchLimits = DEFAULT_LIMITS,
): Promise<Fetched> {
  const deadline = AbortSignal.timeout(limits.timeoutMs);
  const signal = limits.signal ? AbortSignal.any([limits.signal, deadline]) : deadline;
  const seen = new Set<string>();
  let current = url;
  for (let hop = 0; ; hop++) {
    if (seen.has(current)) throw new FetchFailure(`redirect loop at ${current}`, url);
    seen.add(current);
    let target: URL;
    try {
      target = new URL(current);
    } catch {
      throw new FetchFailure(`not a valid URL: ${current}`, url);
    }
    if (target.protocol !== "http:" && target.protocol !== "https:")
      throw new FetchFailure(`cannot fetch ${target.protocol} URLs`, url);
    let exchange: Exchange;
    try {
      exchange = await get(
        target,
        {
          "user-agent": USER_AGENT,
          accept:
            "text/html,application/xhtml+xml,application/json,text/plain;q=0.9,application/pdf;q=0.8,*/*;q=0.5",
          "accept-encoding": "gzip, deflate, br",
          ...limits.headers,
        },
        signal,
      );
    } catch (error) {
      if (deadline.aborted)
        throw new FetchFailure(`timed out after ${Math.round(limits.timeoutMs / 1000)} s`, url);
      if (limits.signal?.aborted) throw new FetchFailure("cancelled", url);
      throw new FetchFailure(reason(error), url);
    }
    const { response } = exchange;
    const status = response.statusCode ?? 0;
    const headers = flatten(response.headers);
    if (status >= 300 && status < 400 && headers.location) {
      release(exchange);
      if (hop >= limits.maxRedirects)
        throw new FetchFailure(`more than ${limits.maxRedirects} redirects`, url);
      current = new URL(headers.location, current).toString();
      continue;
    }
    // the deadline and the tool's signal cut a body mid-read too, not only the wait for its head
    addAbortSignal(signal, response);
    const decoder = decoderFor(headers["content-encoding"]);
    // pipeline tears both ends down together: a decoder error or early stop destroys the response
    const source: Readable = decoder ? pipeline(response, decoder, () => undefined) : response;
    const chunks: Buffer[] = [];
    const page = (truncated: boolean, timedOut: boolean): Fetched => ({
      url: current,
      status,
      headers,
      body: Buffer.concat(chunks),
      truncated,
      timedOut,
    });
    try {
      const truncated = await readCapped(source, limits.maxBytes, chunks);
      if (truncated) {
        source.destroy();
        release(exchange);
      }
      return page(truncated, false);
    } catch (error) {
      source.destroy();
      release(exchange);
      if (deadline.aborted || limits.signal?.aborted) return page(false, true);
      if (chunks.length) return page(true, false);
      throw new FetchFailure(`reading the body failed: ${reason(error)}`, url);
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
