import { createServer, get, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { ListenAddress } from "../../boundary/gateway/gateway.ts";
import type { ServerMetrics } from "./server-metrics.ts";

/**
 * `GET /metrics` for a Prometheus scraper, on `[telemetry] metrics_listen`:
 * the server's own numbers, then the door's, which the gateway (a process of
 * its own) answers on its loopback port. A gateway that does not answer in
 * time leaves its part out and says so in a gauge, so a slow door never
 * stalls a scrape; what it answers is read up to a bound.
 */
const GATEWAY_WAIT_MS = 2_000;
const MAX_GATEWAY_BYTES = 8 * 1024 * 1024;

export interface RunningMetrics {
  url: string;
  close(): Promise<void>;
}

export async function serveMetrics(options: {
  listen: ListenAddress;
  metrics: ServerMetrics;
  gatewayPort: () => number;
}): Promise<RunningMetrics> {
  const server: Server = createServer((req, res) => {
    req.resume();
    if (req.method !== "GET" || (req.url ?? "").split("?")[0] !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain" }).end("only GET /metrics here\n");
      return;
    }
    void Promise.all([options.metrics.text(), gatewayText(options.gatewayPort())]).then(
      ([own, door]) =>
        res
          .writeHead(200, { "content-type": options.metrics.contentType })
          .end(
            `${own}\n# HELP roster_door_metrics_up Whether the gateway answered with the door's metrics\n# TYPE roster_door_metrics_up gauge\nroster_door_metrics_up ${door ? 1 : 0}\n${door ?? ""}`,
          ),
      () =>
        res
          .writeHead(500, { "content-type": "text/plain" })
          .end("the metrics could not be gathered\n"),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.listen.port, options.listen.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
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
