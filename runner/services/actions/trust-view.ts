import { scopeApplies } from "../../boundary/gateway/judging/judge.ts";
import type { LoadedConfig } from "../../ground/config/load.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { workerSubject } from "../../ground/config/subject.ts";
import { listGates } from "./gates.ts";
import { alwaysGates, EARNED_AFTER_DEFAULT } from "./trust.ts";

/**
 * `roster trust <worker>`: for each intent the worker may propose, what runs
 * at once and what waits for a human — the rules in the order they are
 * tried, then the grant's default, with earned trust's progress.
 */
export interface IntentTrust {
  intent: string;
  executor: string;
  rules: Array<{ when: string; level: string; source: string }>;
  default: string;
  /** Why it always waits for a human, whatever the rules say (trust.ts alwaysGates). */
  always?: string;
  /** For earned levels: executed and denied gates so far, and how many it takes. */
  earned?: { executed: number; denied: number; after: number; now: "auto" | "gate" };
}

export function trustOf(paths: RosterPaths, config: LoadedConfig, worker: string): IntentTrust[] {
  const subject = workerSubject(worker);
  const gates = listGates(paths, worker);
  const seen = new Set<string>();
  const out: IntentTrust[] = [];
  for (const grant of config.actions) {
    if (!scopeApplies(grant.scope, subject) || seen.has(grant.name)) continue;
    seen.add(grant.name); // the first grant in scope is the one the host uses
    const rules = config.trust
      .filter((rule) => rule.intent === grant.name && scopeApplies(rule.scope, subject))
      .map((rule) => ({
        when:
          Object.entries(rule.match ?? {})
            .map(([field, glob]) => `${field} matches ${glob}`)
            .join(" and ") || "always",
        level:
          rule.level === "earned"
            ? `earned after ${rule.after ?? grant.after ?? EARNED_AFTER_DEFAULT}`
            : rule.level,
        source: rule.source,
      }));
    const entry: IntentTrust = {
      intent: grant.name,
      executor: grant.executor,
      rules,
      default: grant.trust ?? "gate",
    };
    const always = alwaysGates(grant.executor);
    if (always) {
      out.push({ ...entry, rules: [], default: "gate", always });
      continue;
    }
    const earnedAnywhere =
      grant.trust === "earned" || rules.some((rule) => rule.level.startsWith("earned"));
    if (earnedAnywhere) {
      const mine = gates.filter((gate) => gate.intent === grant.name);
      const executed = mine.filter((gate) => gate.state === "executed").length;
      const denied = mine.filter((gate) => gate.state === "denied").length;
      const after = grant.after ?? EARNED_AFTER_DEFAULT;
      entry.earned = {
        executed,
        denied,
        after,
        now: denied === 0 && executed >= after ? "auto" : "gate",
      };
    }
    out.push(entry);
  }
  return out;
}

export function formatTrust(worker: string, intents: IntentTrust[]): string {
  if (!intents.length)
    return `${worker} may propose nothing: no [[action]] grant is in scope, so every proposal is refused\n`;
  const lines = [`${worker} may propose (anything else is refused):`];
  for (const intent of intents) {
    lines.push(`  ${intent.intent} → ${intent.executor}`);
    if (intent.always) {
      lines.push(`    ${"gate".padEnd(16)} always: ${intent.always}, whatever the rules say`);
      continue;
    }
    for (const rule of intent.rules)
      lines.push(`    ${rule.level.padEnd(16)} when ${rule.when}  (${rule.source})`);
    lines.push(`    ${intent.default.padEnd(16)} otherwise (the grant's default)`);
    if (intent.earned) {
      const { executed, denied, after, now } = intent.earned;
      lines.push(
        `    earned so far: ${executed} of ${after} executed, ${denied} denied → ${now === "auto" ? "runs unasked" : "still gates"}${denied ? " (a denial revoked it)" : ""}`,
      );
    }
  }
  return `${lines.join("\n")}\n`;
}
