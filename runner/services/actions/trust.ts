import { globMatches, scopeApplies } from "../../boundary/gateway/judging/judge.ts";
import type {
  ActionGrant,
  Scoped,
  TrustLevel,
  TrustRule,
} from "../../ground/config/action-schema.ts";
import type { Gate } from "./gates.ts";
import { CHANNEL_EXECUTORS, type ChannelTrust, trustedForRun } from "./trusted-channels.ts";

/**
 * Who decides a proposal: run it now ("auto") or hold it for a human
 * ("gate"). Identity edits and access requests always gate; a send or
 * purpose edit into a trusted channel runs when that channel is the run's
 * own (its origin, or linked with it: trusted-channels.ts) — a run's
 * authority is where its input came from,
 * never the channel its payload names. Otherwise the first `[[trust]]` rule
 * in scope for the intent whose payload
 * globs all hold decides; with none, the grant's own `trust` (gate by
 * default). "earned" runs unasked once `after` gates of this worker and intent
 * were executed with no denial ever; one denial revokes it.
 */
export const EARNED_AFTER_DEFAULT = 5;

/**
 * Executors whose proposals always wait for a human, whatever a grant's
 * `trust` or a `[[trust]]` rule says (org or worker, auto or earned): who a
 * worker is, and what the door lets through, are never its own call.
 */
const ALWAYS_GATES: Readonly<Record<string, string>> = {
  identity: "identity edits always gate",
  access: "an access request always waits for a human",
};

/** Why this executor's proposals always wait for a human, or undefined when trust decides. */
export function alwaysGates(executor: string): string | undefined {
  return Object.hasOwn(ALWAYS_GATES, executor) ? ALWAYS_GATES[executor] : undefined;
}

export interface TrustDecision {
  run: "auto" | "gate";
  /** Why, in words: the rule or default that decided. */
  because: string;
}

/** A payload field against a glob: strings trimmed (or the address inside <…>), lists element by element. */
export function fieldMatches(value: unknown, pattern: string): boolean {
  const one = (item: unknown) => {
    if (typeof item !== "string" && typeof item !== "number") return false;
    const text = String(item).trim();
    const address = /<([^<>]+)>\s*$/.exec(text)?.[1];
    return globMatches(pattern, text) || (address !== undefined && globMatches(pattern, address));
  };
  if (Array.isArray(value)) return value.length > 0 && value.every(one);
  return one(value);
}

export function ruleHolds(rule: Pick<TrustRule, "match">, payload: unknown): boolean {
  const fields = payload && typeof payload === "object" ? (payload as Record<string, unknown>) : {};
  return Object.entries(rule.match ?? {}).every(([field, pattern]) =>
    fieldMatches(fields[field], pattern),
  );
}

export function decideTrust(options: {
  grant: Scoped<ActionGrant>;
  rules: Scoped<TrustRule>[];
  subject: string;
  payload: unknown;
  /** The operator's trust and the links (data/channels/settings.json, links.json). */
  channels?: ChannelTrust;
  /** The channels the run's input came from (its token's); undefined when the token doesn't say. */
  origins?: readonly string[] | undefined;
  /** This worker's gates (any intent), read only when earned trust has to count them. */
  history: () => Gate[];
}): TrustDecision {
  const { grant, subject, payload } = options;
  const always = alwaysGates(grant.executor);
  if (always) return { run: "gate", because: always };
  const channel = (payload as { channel_id?: unknown } | undefined)?.channel_id;
  if (
    CHANNEL_EXECUTORS.has(grant.executor) &&
    typeof channel === "string" &&
    options.channels &&
    trustedForRun(options.channels, channel, options.origins)
  )
    return { run: "auto", because: `${channel} is this run's own channel and trusted` };
  const rule = options.rules.find(
    (candidate) =>
      candidate.intent === grant.name &&
      scopeApplies(candidate.scope, subject) &&
      ruleHolds(candidate, payload),
  );
  const level: TrustLevel = rule?.level ?? grant.trust ?? "gate";
  const source = rule
    ? `[[trust]] for "${rule.intent}" (${rule.source})`
    : `the "${grant.name}" grant's default`;
  if (level !== "earned") return { run: level, because: `${level} by ${source}` };
  const after = rule?.after ?? grant.after ?? EARNED_AFTER_DEFAULT;
  const mine = options.history().filter((gate) => gate.intent === grant.name);
  const denied = mine.filter((gate) => gate.state === "denied").length;
  const executed = mine.filter((gate) => gate.state === "executed").length;
  if (denied > 0)
    return { run: "gate", because: `earned trust revoked: ${denied} denied before (${source})` };
  if (executed >= after)
    return {
      run: "auto",
      because: `earned: ${executed} approved and executed, none denied (${source})`,
    };
  return { run: "gate", because: `earning trust: ${executed} of ${after} executed (${source})` };
}
