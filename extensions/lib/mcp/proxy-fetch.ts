/**
 * A fetch for the MCP SDK's HTTP transports that goes out through the box's
 * proxy (the gateway) on Node's own http client, as extensions/lib/http.ts
 * does and for the same reason (undici's parser can take the process down
 * when a peer hangs up mid-body). The body streams, so SSE works, and is cut
 * at `maxBytes` per response: a server that answers 100 MB, or streams
 * forever, errors that one response instead of filling the box's memory.
 */
import { request as httpRequest, type IncomingMessage, type RequestOptions } from "node:http";
import { request as httpsRequest } from "node:https";
import { HttpsProxyAgent } from "https-proxy-agent";
import { proxyFor } from "../http.ts";

export type FetchLike = (url: string | URL, init?: RequestInit) => Promise<Response>;

/**
 * A response cut at the cap: the stream errors with this, and `onOverflow`
 * hears it with the tool the request called (undefined for a GET stream,
 * which carries every answer).
 */
export class ResponseTooLarge extends Error {}

/** The tool a tools/call body names, so a cut response fails that call and no other. */
function calledTool(body: string | Uint8Array | undefined): string | undefined {
  if (body === undefined) return undefined;
  try {
    const message: unknown = JSON.parse(
      typeof body === "string" ? body : Buffer.from(body).toString("utf8"),
    );
    const { method, params } = (message ?? {}) as { method?: unknown; params?: { name?: unknown } };
    return method === "tools/call" && typeof params?.name === "string" ? params.name : "";
  } catch {
    return "";
  }
}

const tunnels = new Map<string, HttpsProxyAgent<string>>();
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

function agentFor(target: URL): HttpsProxyAgent<string> | undefined {
  const proxy = proxyFor(target);
  if (!proxy) return undefined;
  let agent = tunnels.get(proxy);
  if (!agent) {
    // keep-alive: a session's POSTs reuse a tunnel instead of a CONNECT each
    agent = new HttpsProxyAgent(proxy, { keepAlive: true });
    tunnels.set(proxy, agent);
  }
  return agent;
}

function bodyOf(init: RequestInit | undefined): string | Uint8Array | undefined {
  const body = init?.body;
  if (body === undefined || body === null) return undefined;
  if (typeof body === "string" || body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (body instanceof URLSearchParams) return body.toString();
  throw new TypeError("the MCP fetch sends string or byte bodies only");
}

const MiB = (bytes: number) => `${Math.round(bytes / (1024 * 1024))} MiB`;

/** The response body as a web stream that errors past `maxBytes` and tears the socket down. */
function cappedBody(
  response: IncomingMessage,
  maxBytes: number,
  onOverflow: () => void,
): ReadableStream<Uint8Array> {
  let size = 0;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      response.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) {
          const error = new ResponseTooLarge(
            `the server's response passed ${MiB(maxBytes)} and was cut off`,
          );
          controller.error(error);
          response.destroy();
          onOverflow();
          return;
        }
        controller.enqueue(new Uint8Array(chunk));
        // back-pressure: stop reading until the SDK has taken what it has
        if ((controller.desiredSize ?? 1) <= 0) response.pause();
      });
      response.on("end", () => {
        try {
          controller.close();
        } catch {
          // already errored
        }
      });
      response.on("error", (error) => {
        try {
          controller.error(error);
        } catch {
          // already closed
        }
      });
    },
    pull() {
      response.resume();
    },
    cancel() {
      response.destroy();
    },
  });
}

export function proxyFetch(options: {
  maxBytes: number;
  onOverflow: (error: ResponseTooLarge, tool: string | undefined) => void;
}): FetchLike {
  return (url, init) =>
    new Promise<Response>((resolve, reject) => {
      const target = new URL(String(url));
      if (target.protocol !== "https:" && target.protocol !== "http:") {
        reject(new TypeError(`cannot fetch ${target.protocol} URLs`));
        return;
      }
      const headers: Record<string, string> = {};
      new Headers(init?.headers).forEach((value, name) => {
        headers[name] = value;
      });
      let body: string | Uint8Array | undefined;
      try {
        body = bodyOf(init);
      } catch (error) {
        reject(error);
        return;
      }
      const signal = init?.signal ?? undefined;
      const agent = agentFor(target);
      const requestOptions: RequestOptions = {
        method: init?.method ?? "GET",
        headers,
        ...(agent ? { agent } : {}),
        ...(signal ? { signal } : {}),
      };
      const request =
        target.protocol === "https:"
          ? httpsRequest(target, requestOptions)
          : httpRequest(target, requestOptions);
      request.on("error", reject);
      request.once("response", (response) => {
        response.on("error", () => undefined); // surfaces through the stream instead
        const status = response.statusCode ?? 0;
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(response.headers)) {
          if (value === undefined) continue;
          for (const one of Array.isArray(value) ? value : [value]) {
            try {
              responseHeaders.append(name, one);
            } catch {
              // a header Headers refuses is dropped, not fatal
            }
          }
        }
        try {
          const stream = NULL_BODY.has(status)
            ? null
            : cappedBody(response, options.maxBytes, () =>
                options.onOverflow(
                  new ResponseTooLarge(
                    `the server's response passed ${MiB(options.maxBytes)} and was cut off`,
                  ),
                  calledTool(body),
                ),
              );
          if (!stream) response.resume();
          resolve(new Response(stream, { status, headers: responseHeaders }));
        } catch (error) {
          response.destroy();
          reject(new Error(`unusable HTTP response (status ${status}): ${String(error)}`));
        }
      });
      request.end(body);
    });
}
