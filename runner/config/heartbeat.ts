import type { HeartbeatRule } from "./config-schema.ts";

/**
 * A worker's heartbeat as the server uses it: how often, what it is told,
 * its ceiling. Only org.toml starts one (`[[heartbeat]] workers = [...]`);
 * the first rule naming the worker wins.
 */
export interface Heartbeat {
  everyMs: number;
  prompt: string;
  ceilingMin: number;
}

export const HEARTBEAT_PROMPT =
  "Heartbeat: look over your task list (~/self/schedule.json), your journal and your store; do what is due. If nothing is, say so in one line.";

export function heartbeatFor(
  rules: HeartbeatRule[] | undefined,
  worker: string,
): Heartbeat | undefined {
  const rule = rules?.find((candidate) => candidate.workers.includes(worker));
  if (!rule) return undefined;
  const unit = { m: 60_000, h: 3_600_000, d: 86_400_000 }[rule.every.slice(-1) as "m" | "h" | "d"];
  return {
    everyMs: Number.parseInt(rule.every, 10) * unit,
    prompt: rule.prompt ?? HEARTBEAT_PROMPT,
    ceilingMin: rule.ceiling_min ?? 10,
  };
}
