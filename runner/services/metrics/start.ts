import { parseAddr } from "../../boundary/gateway/listen.ts";
import { errorMessage } from "../../ground/errors.ts";
import type { RunningMetrics } from "./metrics-listener.ts";
import type { ServerSources } from "./server-metrics.ts";

/**
 * /metrics for a Prometheus scraper when `[telemetry] metrics_listen` names
 * where (off otherwise, and prom-client never loads). A failure to listen is
 * reported and the server goes on: its work does not depend on being watched.
 */
export async function startMetrics(
  where: string | undefined,
  note: (text: string) => void,
  gatewayPort: () => number,
  sources: ServerSources,
): Promise<RunningMetrics | undefined> {
  if (!where) return undefined;
  try {
    const [listen] = parseAddr(where);
    if (!listen) throw new Error("no address to listen on");
    const { ServerMetrics } = await import("./server-metrics.ts");
    const { serveMetrics } = await import("./metrics-listener.ts");
    const running = await serveMetrics({
      listen,
      metrics: new ServerMetrics(sources),
      gatewayPort,
    });
    note(`metrics on ${running.url}`);
    return running;
  } catch (error) {
    note(`metrics are not served (telemetry.metrics_listen ${where}): ${errorMessage(error)}`);
    return undefined;
  }
}
