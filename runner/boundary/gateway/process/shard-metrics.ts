import { AggregatorRegistry } from "prom-client";
import type { MetricsSource } from "../exchange/server.ts";
import type { Shards } from "./shards.ts";

/**
 * The gateway's /metrics when shards serve the doors: this process's own
 * numbers and every shard's, added up series by series (prom-client's
 * aggregation, as for a cluster), so a monitoring stack reads one door.
 */
export function withShardMetrics(own: MetricsSource, shards: Shards): MetricsSource {
  const series = async () => [await own.series(), ...(await shards.metrics())];
  return {
    contentType: own.contentType,
    series: async () => (await series()).flat(),
    text: async () => AggregatorRegistry.aggregate(await series()).metrics(),
  };
}
