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
