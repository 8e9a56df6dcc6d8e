import type { ConnectionMount, RepoPolicy } from "./connections.ts";
import {
  KNOWLEDGE_WRITE_DEFAULT,
  type KnowledgeSection,
  type KnowledgeWriteFrom,
} from "./knowledge.ts";
import { NARROW_ONLY, type NarrowingReport } from "./narrowing-report.ts";

/**
 * `[knowledge]` as a worker's runs get it: org.toml's, narrowed by the
 * worker's own (never widened). The switch and the limits hold for every
 * gated repo the worker gets — its own knowledge repo and each gated
 * host-repo connection — over the repo's own limits: the smaller wins. A
 * limit nobody set leaves each repo its own (connections.ts REPO_DEFAULTS).
 * `write_from` stays what it was: the worker's own repo and its task list
 * (knowledge.ts); a host-repo connection says its own.
 */
export interface KnowledgeView {
  /** false: the worker's runs get no gated repo at all. */
  enabled: boolean;
  write_from: KnowledgeWriteFrom;
  max_file_bytes: number | undefined;
  max_repo_bytes: number | undefined;
  max_deletions_ungated: number | undefined;
}

const LIMITS = ["max_file_bytes", "max_repo_bytes", "max_deletions_ungated"] as const;
const LEAST: Record<(typeof LIMITS)[number], number> = {
  max_file_bytes: 1,
  max_repo_bytes: 1,
  max_deletions_ungated: 0,
};

/** Whether a `write_from` lets runs that carried a conversation write, however it is spelled. */
const anyRun = (writeFrom: string | undefined) => writeFrom === "any" || writeFrom === "any-run";

/** The worker's number when it is a real, smaller one; the org's otherwise (undefined: nobody set it). */
function lower(org: number | undefined, worker: number | undefined, least: number) {
  const own = worker !== undefined && Number.isInteger(worker) && worker >= least;
  if (!own) return org;
  return org === undefined || worker < org ? worker : org;
}

export function narrowestKnowledge(
  org: KnowledgeSection | undefined,
  worker: KnowledgeSection | undefined,
): KnowledgeView {
  const keeps =
    !anyRun(org?.write_from) || (worker?.write_from !== undefined && !anyRun(worker.write_from));
  return {
    enabled: org?.enabled !== false && worker?.enabled !== false,
    // the clean-room rule kept by either side holds
    write_from: keeps ? KNOWLEDGE_WRITE_DEFAULT : (org?.write_from ?? KNOWLEDGE_WRITE_DEFAULT),
    max_file_bytes: lower(org?.max_file_bytes, worker?.max_file_bytes, LEAST.max_file_bytes),
    max_repo_bytes: lower(org?.max_repo_bytes, worker?.max_repo_bytes, LEAST.max_repo_bytes),
    max_deletions_ungated: lower(
      org?.max_deletions_ungated,
      worker?.max_deletions_ungated,
      LEAST.max_deletions_ungated,
    ),
  };
}

/** A gated repo's rules with the knowledge limits laid over them: the smaller of each. */
export function withKnowledgeLimits(policy: RepoPolicy, knowledge: KnowledgeView): RepoPolicy {
  return {
    ...policy,
    maxFileBytes: Math.min(policy.maxFileBytes, knowledge.max_file_bytes ?? Infinity),
    maxDeletionsUngated: Math.min(
      policy.maxDeletionsUngated,
      knowledge.max_deletions_ungated ?? Infinity,
    ),
  };
}

/**
 * The mounts a worker's runs get under `[knowledge]`: with it switched off,
 * none of the gated repos (a run gets no clone of them and repo_push finds
 * nothing to land on); otherwise each gated one under the knowledge limits.
 */
export function knowledgeMounts(
  mounts: ConnectionMount[],
  knowledge: KnowledgeView,
): ConnectionMount[] {
  return mounts
    .filter((mount) => knowledge.enabled || !mount.gated)
    .map((mount) =>
      mount.gated ? { ...mount, gated: withKnowledgeLimits(mount.gated, knowledge) } : mount,
    );
}

/** What a worker.toml `[knowledge]` may not do: switch on, let more runs write, or raise a limit. */
export function checkKnowledge(
  org: KnowledgeSection | undefined,
  worker: KnowledgeSection | undefined,
  { at, tooMuch }: NarrowingReport,
): void {
  if (!worker) return;
  if (worker.enabled === true && org?.enabled === false)
    at(
      "/knowledge/enabled",
      `true switches on the gated repos org.toml switches off ([knowledge] enabled = false); ${NARROW_ONLY}`,
    );
  const orgFrom = org?.write_from ?? KNOWLEDGE_WRITE_DEFAULT;
  if (anyRun(worker.write_from) && !anyRun(orgFrom))
    at(
      "/knowledge/write_from",
      `${JSON.stringify(worker.write_from)} lets runs that carried a conversation write where org.toml keeps the clean-room rule (${JSON.stringify(orgFrom)}${org?.write_from === undefined ? " by default" : ""}); ${NARROW_ONLY}`,
    );
  for (const key of LIMITS) {
    const value = worker[key];
    const orgValue = org?.[key];
    if (value !== undefined && orgValue !== undefined && value > orgValue)
      tooMuch(`/knowledge/${key}`, value, orgValue, false);
  }
}
