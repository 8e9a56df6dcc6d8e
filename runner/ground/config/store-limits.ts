import { formatByteSize, parseByteSize } from "../text/byte-size.ts";

/**
 * How large a worker's store may grow, how large a run's own folder ($HOME
 * and its repo clones) may grow, and the share of the data filesystem kept
 * free for every worker: org.toml's `[store]`, a worker's own sizes only ever
 * lower; a $HOME's limit unset is the store's. Both have a limit by default,
 * so one box can't take the host's disk before anyone has written a config.
 * How long a finished run's $HOME and clones are kept (`scratch_keep`) is the
 * host's alone.
 */
export const STORE_DEFAULTS = {
  max_size: "10g",
  home_max_size: "10g",
  reserve: 0.05,
  scratch_keep: "3d",
} as const;

export interface StoreLimits {
  /** Bytes a store (and each channel store) may hold on disk. */
  maxBytes: number;
  /** Bytes a run's $HOME and its repo clones may hold on disk together. */
  homeMaxBytes: number;
  /** The share of the data filesystem that must stay free. */
  reserve: number;
}

type SizeKey = "max_size" | "home_max_size";

/** The org's size (or the default), lowered by the worker's own when it is lower. */
function narrowestSize(
  key: SizeKey,
  org: Partial<Record<SizeKey, string>> | undefined,
  worker: Partial<Record<SizeKey, string>> | undefined,
): number {
  const orgBytes = parseByteSize(org?.[key] ?? STORE_DEFAULTS[key]);
  const base = orgBytes > 0 ? orgBytes : parseByteSize(STORE_DEFAULTS[key]);
  const text = worker?.[key];
  const own = text ? parseByteSize(text) : 0;
  return own > 0 && own < base ? own : base;
}

/**
 * `home_max_size` where a file leaves it unset: its `max_size`, so a worker
 * given a small store gets a $HOME no larger without saying so twice.
 */
export function homeSize(store: { max_size?: string; home_max_size?: string } | undefined) {
  return store?.home_max_size ?? store?.max_size;
}

export function narrowestStore(
  org: { max_size?: string; home_max_size?: string; reserve?: number } | undefined,
  worker: { max_size?: string; home_max_size?: string } | undefined,
): StoreLimits {
  const home = (store: typeof worker) => {
    const size = homeSize(store);
    return size === undefined ? {} : { home_max_size: size };
  };
  return {
    maxBytes: narrowestSize("max_size", org, worker),
    homeMaxBytes: narrowestSize("home_max_size", home(org), home(worker)),
    reserve: org?.reserve ?? STORE_DEFAULTS.reserve,
  };
}

/** `[store] scratch_keep` and `roster runs prune --older-than`: "90m", "12h", "3d". */
export const AGE_PATTERN = "^[0-9]{1,6}[smhd]$";
const AGE_UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** Milliseconds for an age such as "3d"; undefined for text that is not one. */
export function ageMs(text: string): number | undefined {
  const match = /^([0-9]{1,6})([smhd])$/.exec(text);
  if (!match?.[1] || !match[2]) return undefined;
  return Number.parseInt(match[1], 10) * AGE_UNIT_MS[match[2] as keyof typeof AGE_UNIT_MS];
}

/** How long a finished run keeps its $HOME and clones: org.toml's `[store] scratch_keep`. */
export function scratchKeepMs(org: { scratch_keep?: string } | undefined): number {
  return ageMs(org?.scratch_keep ?? STORE_DEFAULTS.scratch_keep) ?? 3 * AGE_UNIT_MS.d;
}

/** A byte count as a person reads it: "512m", "1.5g". */
export function describeSize(bytes: number): string {
  if (bytes >= 1024 ** 3) return `${(bytes / 1024 ** 3).toFixed(1).replace(/\.0$/, "")}g`;
  if (bytes >= 1024 ** 2) return `${Math.round(bytes / 1024 ** 2)}m`;
  return formatByteSize(Math.max(1024, Math.round(bytes / 1024) * 1024));
}
