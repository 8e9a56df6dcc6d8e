/**
 * What the gateway does when org.toml says nothing: its port, its timeouts,
 * and the V8 flags of a process that runs it.
 */
import type { GatewaySection } from "../../../ground/config/config-schema.ts";

/** The gateway's well-known port on loopback (boxes come in by its door, not this port) unless [gateway] port says otherwise. */
export const DEFAULT_GATEWAY_PORT = 7300;

/**
 * How long the gateway waits, in ms, unless `[gateway.timeouts]` says
 * otherwise. The upstream's headers may be slow (a model thinking before its
 * first byte); silence in the middle of a body is bounded separately, and a
 * box connection idle both ways is closed with whatever it was relaying.
 */
export const GATEWAY_TIMEOUT_DEFAULTS = {
  connectMs: 10_000,
  upstreamHeadersMs: 120_000,
  upstreamBodyIdleMs: 120_000,
  headersMs: 30_000,
  requestMs: 300_000,
  idleMs: 300_000,
  keepAliveMs: 30_000,
};
export type GatewayTimeouts = typeof GATEWAY_TIMEOUT_DEFAULTS;

/**
 * V8 flags for a process that runs the gateway. A young generation capped at
 * 2 MiB per semi-space (V8's default grows it to 16) holds the gateway's
 * memory under load up to a third lower at the same throughput: relaying
 * bodies allocates many short-lived buffers, and the larger space let them
 * pile up between scavenges (bench/gateway.ts). bin/roster.mjs's first lines
 * pass the same flag to every `roster` command, the server included.
 *
 * An old generation allowed 64 MiB before its first full collection: at the
 * start of each burst of large answers after a quiet spell (a run's model
 * calls), V8 otherwise ran four or five full collections in a few hundred
 * ms with the old generation under 20 MiB, each marking the gateway's whole
 * heap (its code and sources are most of it) on the helper threads. That was
 * about a tenth of the door's CPU at 1 MiB answers; memory under load held
 * (bench/RESULTS.md, "The door's full collections at a burst's start").
 * bin/roster.mjs adds it for `roster gateway …` only.
 *
 * Not `--expose-gc`: the full collection after a burst of held bodies is
 * exposed when first asked for (bodies/full-collection.ts says why).
 */
export const GATEWAY_NODE_FLAGS = ["--max-semi-space-size=2", "--initial-old-space-size=64"];

/** Defaults, then org.toml's `[gateway.timeouts]` (seconds), then the caller's overrides (ms). */
export function resolveTimeouts(
  section: GatewaySection["timeouts"],
  overrides: Partial<GatewayTimeouts> = {},
): GatewayTimeouts {
  const secs = (value: number | undefined) => (value === undefined ? undefined : value * 1000);
  const fromConfig: Partial<GatewayTimeouts> = {
    connectMs: secs(section?.connect_secs),
    upstreamHeadersMs: secs(section?.upstream_headers_secs),
    upstreamBodyIdleMs: secs(section?.upstream_body_idle_secs),
    headersMs: secs(section?.client_headers_secs),
    idleMs: secs(section?.client_idle_secs),
  };
  const merged = { ...GATEWAY_TIMEOUT_DEFAULTS };
  for (const layer of [fromConfig, overrides]) {
    for (const [key, value] of Object.entries(layer) as [
      keyof GatewayTimeouts,
      number | undefined,
    ][]) {
      if (value !== undefined) merged[key] = value;
    }
  }
  return merged;
}

/**
 * How many shards (process/shards.ts) serve the runs' doors: `[gateway] shards`,
 * or for "auto" one per core but one, at most 8, when the host has 4 cores or
 * more. On fewer, the boxes' own work already fills the cores a shard would
 * take, and one process serves every door.
 */
export function shardCount(setting: "auto" | number | undefined, cores: number): number {
  if (typeof setting === "number") return setting;
  return cores >= 4 ? Math.min(8, cores - 1) : 0;
}
