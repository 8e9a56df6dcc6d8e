import { createServer, get, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { ListenAddress } from "../../boundary/gateway/process/gateway.ts";
import { errorMessage } from "../../ground/errors.ts";
import { matches } from "../console/key.ts";
import { hostNamesConsole } from "../console/origin.ts";
import type { ServerMetrics } from "./server-metrics.ts";

/**
 * `GET /metrics` for a Prometheus scraper, on `[telemetry] metrics_listen`:
 * the server's own numbers, then the door's, which the gateway (a process of
 * its own) answers on its loopback port. A gateway that does not answer in
 * time leaves its part out and says so in a gauge, so a slow door never
 * stalls a scrape; what it answers is read up to a bound.
 *
 * Who may scrape: never a box (the door closes this port, closed-ports.ts);
 * only a request naming this listener's own address and port in its Host
 * header, so a web page can't rebind a name of its own to this address and
 * read the numbers through a browser; and, when `[telemetry]
 * metrics_credential` names a vault credential, only one that sends its key
 * as a bearer token. A scrape that fails says why on the server's log.
 */
const GATEWAY_WAIT_MS = 2_000;
const MAX_GATEWAY_BYTES = 8 * 1024 * 1024;

export interface RunningMetrics {
  url: string;
  close(): Promise<void>;
}

/** The token a scrape must carry: none asked, the key, or why it can't be had (refused, then). */
export type MetricsToken =
  | { kind: "none" }
  | { kind: "key"; key: string }
  | { kind: "broken"; why: string };

export async function serveMetrics(options: {
  listen: ListenAddress;
  metrics: ServerMetrics;
  gatewayPort: () => number;
  /** Read at each scrape: a key changed in the vault counts at once. */
  token: () => MetricsToken;
  note: (text: string) => void;
}): Promise<RunningMetrics> {
  const place = { host: options.listen.host, port: options.listen.port };
  // a failure is said once until it changes or a scrape succeeds: a scraper asks every few seconds
  let lastFailure = "";
  const fail = (text: string) => {
    if (text !== lastFailure) options.note(text);
    lastFailure = text;
  };
  const server: Server = createServer((req, res) => {
    req.resume();
    const refusal = refuse(req, place, options.token());
    if (refusal) {
      if (refusal.log) fail(refusal.log);
      res.writeHead(refusal.status, { "content-type": "text/plain", ...refusal.headers });
      res.end(`${refusal.text}\n`);
      return;
    }
    void Promise.all([options.metrics.text(), gatewayText(options.gatewayPort())]).then(
      ([own, door]) => {
        lastFailure = "";
        res
          .writeHead(200, { "content-type": options.metrics.contentType })
          .end(
            `${own}\n# HELP roster_door_metrics_up Whether the gateway answered with the door's metrics\n# TYPE roster_door_metrics_up gauge\nroster_door_metrics_up ${door ? 1 : 0}\n${door ?? ""}`,
          );
      },
      (error: unknown) => {
        fail(`metrics: a scrape failed: ${errorMessage(error)}`);
        res
          .writeHead(500, { "content-type": "text/plain" })
          .end("the metrics could not be gathered (the server's log says why)\n");
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.listen.port, options.listen.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  place.port = address.port;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface Refusal {
  status: number;
  text: string;
  headers?: Record<string, string>;
  /** Said on the server's log: what an operator must fix. */
  log?: string;
}

/** Why this request gets no metrics, or undefined when it may have them. */
function refuse(
  req: IncomingMessage,
  place: { host: string; port: number },
  token: MetricsToken,
): Refusal | undefined {
  if (req.method !== "GET" || (req.url ?? "").split("?")[0] !== "/metrics")
    return { status: 404, text: "only GET /metrics here" };
  // the console's rule (origin.ts): the listener's own address and port, or localhost on loopback
  if (!hostNamesConsole(req.headers.host, place))
    return {
      status: 421,
      text: `these metrics answer at ${place.host.includes(":") ? `[${place.host}]` : place.host}:${place.port} only; the request named ${JSON.stringify(req.headers.host ?? "")} (Host header)`,
    };
  if (token.kind === "none") return undefined;
  if (token.kind === "broken")
    return {
      status: 503,
      text: "the metrics' token is not available (the server's log says why)",
      log: token.why,
    };
  const presented = /^Bearer ([^\s]+)$/i.exec(req.headers.authorization ?? "")?.[1];
  if (matches(presented, token.key)) return undefined;
  return {
    status: 401,
    text: "a bearer token is needed (the key of the vault credential [telemetry] metrics_credential names)",
    headers: { "www-authenticate": 'Bearer realm="roster metrics"' },
  };
}

/** The gateway's /metrics on its loopback port, or undefined when it is not there in time. */
function gatewayText(port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const request = get(
      { host: "127.0.0.1", port, path: "/metrics", agent: false, timeout: GATEWAY_WAIT_MS },
      (response) => {
        if (response.statusCode !== 200) {
          response.resume();
          resolve(undefined);
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        response.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_GATEWAY_BYTES) {
            request.destroy();
            resolve(undefined);
            return;
          }
          chunks.push(chunk);
        });
        response.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
        response.on("error", () => resolve(undefined));
      },
    );
    request.on("timeout", () => request.destroy());
    request.on("error", () => resolve(undefined));
  });
}
