import type { HeartbeatRule } from "./server-schema.ts";

/**
 * A worker's heartbeat as the server uses it: how often, what it is told,
 * its ceiling. Off unless something turns it on: `heartbeat = "30m"` in the
 * worker's worker.toml, or an org.toml `[[heartbeat]]` rule that lists the
 * worker (or "*"). The worker's own setting wins ("off" switches an org
 * rule's heartbeat off); the prompt and ceiling come from the first rule that
 * lists it, or the defaults. It runs as a host-owned recurring template
 * (tasks/templates.ts).
 */
export interface Heartbeat {
  /** "30m", "6h", "1d". */
  every: string;
  prompt: string;
  ceilingMin: number;
}

export const HEARTBEAT_PROMPT =
  "Heartbeat: look over your task list (~/self/schedule.json), your journal and your store; do what is due. If nothing is, say so in one line.";

export const HEARTBEAT_CEILING_MIN = 10;

export function heartbeatFor(
  rules: HeartbeatRule[] | undefined,
  worker: string,
  own: string | undefined,
): Heartbeat | undefined {
  if (own === "off") return undefined;
  const rule =
    rules?.find((candidate) => candidate.workers.includes(worker)) ??
    rules?.find((candidate) => candidate.workers.includes("*"));
  const every = own ?? rule?.every;
  if (!every) return undefined;
  return {
    every,
    prompt: rule?.prompt ?? HEARTBEAT_PROMPT,
    ceilingMin: rule?.ceiling_min ?? HEARTBEAT_CEILING_MIN,
  };
}

/** The units the public roster reads in an interval, and their length in seconds. */
const PUBLIC_UNITS: Record<string, number> = {
  s: 1,
  sec: 1,
  secs: 1,
  m: 60,
  min: 60,
  mins: 60,
  h: 3600,
  hr: 3600,
  hrs: 3600,
  d: 86_400,
  day: 86_400,
  days: 86_400,
};

/**
 * A heartbeat as the public roster writes it ("every 30m", "2 hrs", "90s",
 * "every 1 day": `every` optional, a whole number, a unit) in our spelling,
 * the largest whole unit of m, h or d ("1d", "2h", "30m"). Seconds have no
 * place here, so a count that is not whole minutes is rounded up (`rounded`):
 * a heartbeat never comes sooner than the file asks. Undefined when the text
 * is not such an interval.
 */
export function publicInterval(text: string): { every: string; rounded: boolean } | undefined {
  const match = /^\s*(?:every)?\s*\+?([0-9]+)\s*([a-z]+)\s*$/.exec(text);
  const count = match?.[1] ? Number.parseInt(match[1], 10) : 0;
  const unit = match?.[2] ? PUBLIC_UNITS[match[2]] : undefined;
  if (!unit || count <= 0 || !Number.isSafeInteger(count * unit)) return undefined;
  const seconds = count * unit;
  if (seconds % 86_400 === 0) return { every: `${seconds / 86_400}d`, rounded: false };
  if (seconds % 3600 === 0) return { every: `${seconds / 3600}h`, rounded: false };
  return { every: `${Math.ceil(seconds / 60)}m`, rounded: seconds % 60 !== 0 };
}
