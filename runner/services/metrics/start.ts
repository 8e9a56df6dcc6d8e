import { readCredential } from "../../boundary/gateway/credentials/vault.ts";
import { parseAddr } from "../../boundary/gateway/process/listen.ts";
import type { TelemetrySection } from "../../ground/config/server-schema.ts";
import { errorMessage } from "../../ground/errors.ts";
import type { MetricsToken, RunningMetrics } from "./metrics-listener.ts";
import type { ServerSources } from "./server-metrics.ts";

/**
 * /metrics for a Prometheus scraper when `[telemetry] metrics_listen` names
 * where (off otherwise, and prom-client never loads). A failure to listen is
 * reported and the server goes on: its work does not depend on being watched.
 */
export async function startMetrics(
  telemetry: Pick<TelemetrySection, "metrics_listen" | "metrics_credential"> | undefined,
  note: (text: string) => void,
  gatewayPort: () => number,
  sources: ServerSources,
): Promise<RunningMetrics | undefined> {
  const where = telemetry?.metrics_listen;
  if (!where) return undefined;
  try {
    const [listen] = parseAddr(where);
    if (!listen) throw new Error("no address to listen on");
    const { ServerMetrics } = await import("./server-metrics.ts");
    const { serveMetrics } = await import("./metrics-listener.ts");
    const credential = telemetry.metrics_credential;
    const token = (): MetricsToken =>
      credential ? tokenOf(sources.paths.vault, credential) : { kind: "none" };
    const running = await serveMetrics({
      listen,
      metrics: new ServerMetrics(sources),
      gatewayPort,
      token,
      note,
    });
    note(
      `metrics on ${running.url}${credential ? ` (bearer token: vault credential ${credential})` : ""}`,
    );
    // said at start too: a scraper set up now would be refused from its first scrape
    const now = token();
    if (now.kind === "broken") note(now.why);
    return running;
  } catch (error) {
    note(`metrics are not served (telemetry.metrics_listen ${where}): ${errorMessage(error)}`);
    return undefined;
  }
}

/** The key of the vault credential `[telemetry] metrics_credential` names; missing or keyless refuses every scrape. */
function tokenOf(vault: string, name: string): MetricsToken {
  const key = readCredential(vault, name)?.key;
  if (typeof key === "string" && key.length >= 16) return { kind: "key", key };
  return {
    kind: "broken",
    why: `metrics: every scrape is refused: telemetry.metrics_credential names "${name}", but the vault has no such credential with a key of 16 characters or more (roster login ${name})`,
  };
}
