import { formatMemory, parseMemory } from "./memory.ts";

/**
 * How large a worker's store may grow, and the share of the data filesystem
 * kept free for every worker: org.toml's `[store]`, a worker's own
 * `max_size` only ever lower. A store has a limit by default, so one box
 * can't take the host's disk before anyone has written a config.
 */
export const STORE_DEFAULTS = { max_size: "10g", reserve: 0.05 } as const;

export interface StoreLimits {
  /** Bytes a store (and each channel store) may hold on disk. */
  maxBytes: number;
  /** The share of the data filesystem that must stay free. */
  reserve: number;
}

export function narrowestStore(
  org: { max_size?: string; reserve?: number } | undefined,
  worker: { max_size?: string } | undefined,
): StoreLimits {
  const orgBytes = parseMemory(org?.max_size ?? STORE_DEFAULTS.max_size);
  const base = orgBytes > 0 ? orgBytes : parseMemory(STORE_DEFAULTS.max_size);
  const own = worker?.max_size ? parseMemory(worker.max_size) : 0;
  return {
    maxBytes: own > 0 && own < base ? own : base,
    reserve: org?.reserve ?? STORE_DEFAULTS.reserve,
  };
}

/** A byte count as a person reads it: "512m", "1.5g". */
export function describeSize(bytes: number): string {
  if (bytes >= 1024 ** 3) return `${(bytes / 1024 ** 3).toFixed(1).replace(/\.0$/, "")}g`;
  if (bytes >= 1024 ** 2) return `${Math.round(bytes / 1024 ** 2)}m`;
  return formatMemory(Math.max(1024, Math.round(bytes / 1024) * 1024));
}
