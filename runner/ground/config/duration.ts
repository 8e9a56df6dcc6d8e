/**
 * `[box] stall_after` as the runner uses it: "90s", "5m", "1h" in
 * milliseconds, or undefined for "off". The schema has already held the text
 * to that shape; anything else reads as off only here, never as zero (which
 * would stop every run at once).
 */
const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000 } as const;

export function durationMs(text: string): number | undefined {
  const match = /^([1-9][0-9]{0,5})([smh])$/.exec(text);
  if (!match?.[1] || !match[2]) return undefined;
  return Number.parseInt(match[1], 10) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
}

/** "5 minutes", "90 seconds": how a window reads in an error or a prompt. */
export function describeWindow(ms: number): string {
  if (ms % 3_600_000 === 0) return plural(ms / 3_600_000, "hour");
  if (ms % 60_000 === 0) return plural(ms / 60_000, "minute");
  return plural(Math.round(ms / 1000), "second");
}

function plural(n: number, unit: string): string {
  return `${n} ${unit}${n === 1 ? "" : "s"}`;
}
