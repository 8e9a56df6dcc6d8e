/**
 * Box-side client for the action host, https://actions.roster.internal: JSON
 * in, JSON out, through the box's proxy (the gateway answers that name itself
 * and knows the caller from the run token in the proxy URL). Bounded in time
 * and in reply size. Nothing here decides anything: the host does.
 */
import { readFileSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import { request } from "node:https";
import { rootCertificates } from "node:tls";
import { HttpsProxyAgent } from "https-proxy-agent";
import { proxyFor } from "./http.ts";

export const ACTIONS_ORIGIN = "https://actions.roster.internal";

export interface ActionsOptions {
  /** Default 30 s: the whole exchange, head and body. */
  timeoutMs?: number;
  /** Default 1 MiB: a larger reply is an error, not a cut. */
  maxBytes?: number;
  signal?: AbortSignal | undefined;
  /** PEM to trust for the host's certificate; default: Node's roots plus NODE_EXTRA_CA_CERTS, read now. */
  ca?: string | string[];
  /** Where the proxy and CA variables come from (default process.env). */
  env?: NodeJS.ProcessEnv;
}

export interface ActionsReply {
  status: number;
  body: Record<string, unknown>;
}

/** No usable answer from the action host: unreachable, too slow (`timedOut`), too big, or not JSON. */
export class ActionsUnreachable extends Error {
  constructor(
    message: string,
    readonly timedOut = false,
  ) {
    super(message);
  }
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_BYTES = 1024 * 1024;

/**
 * The CA the gateway's leaf for actions.roster.internal chains to. In a box
 * Node read NODE_EXTRA_CA_CERTS when it started; reading it again here keeps
 * a process whose variable was set later (a host-side test) on the same trust.
 */
function trustFor(env: NodeJS.ProcessEnv): string[] | undefined {
  const file = env.NODE_EXTRA_CA_CERTS;
  if (!file) return undefined;
  try {
    return [...rootCertificates, readFileSync(file, "utf8")];
  } catch {
    return undefined; // Node's own trust decides, and a failure names the certificate
  }
}

const seconds = (ms: number) => (ms >= 1000 ? `${Math.round(ms / 1000)} s` : `${ms} ms`);

function reason(error: unknown): string {
  const { code, message } = error as { code?: string; message?: string };
  return message || code || String(error);
}

/** A reply's whole body, bounded: `fail` hears a broken or over-long one, `done` the text at its end. */
function collectBody(
  response: IncomingMessage,
  maxBytes: number,
  fail: (error: unknown) => void,
  done: (text: string) => void,
): void {
  const chunks: Buffer[] = [];
  let size = 0;
  response.on("error", fail);
  response.on("data", (chunk: Buffer) => {
    size += chunk.length;
    if (size > maxBytes) fail(new ActionsUnreachable(`the reply was over ${maxBytes} bytes`));
    else chunks.push(chunk);
  });
  response.on("end", () => done(Buffer.concat(chunks).toString("utf8")));
}

/** The host answers every status with a JSON object; anything else is no usable answer. */
function jsonObject(status: number, text: string): Record<string, unknown> | ActionsUnreachable {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed))
    return new ActionsUnreachable(
      `HTTP ${status} with a reply that is not a JSON object: ${text.slice(0, 200) || "(empty)"}`,
    );
  return parsed as Record<string, unknown>;
}

/** One request to the action host; resolves with any HTTP status the host gave, rejects only with ActionsUnreachable. */
export function callActions(
  method: "GET" | "POST",
  path: string,
  body?: unknown,
  options: ActionsOptions = {},
): Promise<ActionsReply> {
  const env = options.env ?? process.env;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  const target = new URL(path, ACTIONS_ORIGIN);
  const proxy = proxyFor(target, env);
  if (!proxy)
    return Promise.reject(
      new ActionsUnreachable(
        "no proxy in the environment (HTTPS_PROXY): the action host is reached only through the gateway",
      ),
    );
  const deadline = AbortSignal.timeout(timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body), "utf8");
  const ca = options.ca ?? trustFor(env);

  return new Promise<ActionsReply>((resolve, reject) => {
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener("abort", onAbort);
      outcome();
    };
    const fail = (error: unknown) =>
      settle(() => {
        req.destroy();
        if (deadline.aborted)
          reject(new ActionsUnreachable(`no answer within ${seconds(timeoutMs)}`, true));
        else if (options.signal?.aborted) reject(new ActionsUnreachable("cancelled"));
        else
          reject(
            error instanceof ActionsUnreachable ? error : new ActionsUnreachable(reason(error)),
          );
      });
    // The request's own `signal` only reaches it once it has a socket; a proxy that
    // accepts and never answers the CONNECT would hold it forever. So the deadline
    // settles the call itself, and the agent's socket to the proxy carries it too.
    const onAbort = () => fail(signal.reason);
    const req = request(target, {
      method,
      // own agent, no keep-alive: each call owns its tunnel and leaves nothing behind
      agent: new HttpsProxyAgent(proxy, { signal }),
      signal,
      ...(ca ? { ca } : {}),
      headers: {
        accept: "application/json",
        ...(payload
          ? { "content-type": "application/json", "content-length": String(payload.length) }
          : {}),
      },
    });
    req.on("error", fail);
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    req.once("response", (response) =>
      collectBody(response, maxBytes, fail, (text) => {
        const status = response.statusCode ?? 0;
        const reply = jsonObject(status, text);
        if (reply instanceof ActionsUnreachable) fail(reply);
        else settle(() => resolve({ status, body: reply }));
      }),
    );
    req.end(payload);
  });
}
