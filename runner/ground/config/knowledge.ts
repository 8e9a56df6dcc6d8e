import { join } from "node:path";
import { type Static, Type } from "@sinclair/typebox";
import { type ConnectionMount, REPO_DEFAULTS } from "./connections.ts";
import { WriteFrom, writesFromAny } from "./write-from.ts";

/**
 * org.toml `[knowledge]`: which runs may write a worker's knowledge repo.
 * "clean-room" (the default): only runs that carried no conversation, and a
 * task a conversation files may not name its people; "any-run": every run.
 * docs/store.md says why the default keeps conversations out. The switch and
 * the limits hold for every gated repo a worker gets, its own and the
 * host-repo connections (knowledge-limits.ts); a worker.toml `[knowledge]`
 * may only narrow them.
 */
export const KnowledgeSection = Type.Object(
  {
    /** "clean-room" or "any-run" (write-from.ts; "any" is still read). */
    write_from: Type.Optional(WriteFrom),
    /** false: no gated repo at all for the worker's runs (no clone, no repo_push). */
    enabled: Type.Optional(Type.Boolean()),
    /** The largest file a push may carry, in bytes, over every gated repo's own limit. */
    max_file_bytes: Type.Optional(Type.Integer({ minimum: 1 })),
    /** The most a gated repo's tree may hold after a push, in bytes. */
    max_repo_bytes: Type.Optional(Type.Integer({ minimum: 1 })),
    /** A push deleting more files than this waits for a human (confirm_bulk_delete). */
    max_deletions_ungated: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  { additionalProperties: false },
);
export type KnowledgeSection = Static<typeof KnowledgeSection>;

export type KnowledgeWriteFrom = NonNullable<KnowledgeSection["write_from"]>;
export const KNOWLEDGE_WRITE_DEFAULT: KnowledgeWriteFrom = "clean-room";

/**
 * Every worker's own knowledge repo: a gated host-repo connection named
 * `knowledge` that no config file declares. Its bare repository lives with the
 * worker's data (data/workers/<w>/knowledge.git), so the operator's config is
 * never written behind their back; it is granted to that worker alone, takes
 * pushes from the runs `[knowledge] write_from` lets push and is not scanned
 * for participants' names, since remembering people is what it is for.
 * Pushes still go through repo_push and its checks, and through the trust
 * the operator gives `repo-push`.
 */
export const KNOWLEDGE_REPO = "knowledge";

export const knowledgePath = (dataRoot: string, worker: string) =>
  join(dataRoot, "workers", worker, "knowledge.git");

export function knowledgeMount(
  dataRoot: string,
  worker: string,
  writeFrom: KnowledgeWriteFrom = KNOWLEDGE_WRITE_DEFAULT,
): ConnectionMount {
  return {
    name: KNOWLEDGE_REPO,
    path: knowledgePath(dataRoot, worker),
    readOnly: true,
    kind: "host-repo",
    builtIn: true,
    gated: {
      branch: REPO_DEFAULTS.branch,
      allowExecutables: false,
      maxFileBytes: REPO_DEFAULTS.maxFileBytes,
      maxPushBytes: REPO_DEFAULTS.maxPushBytes,
      maxDeletionsUngated: REPO_DEFAULTS.maxDeletionsUngated,
      writeFrom: writesFromAny(writeFrom) ? "any" : "clean",
      scanParticipants: false,
    },
  };
}

/** What the worker is told of its knowledge repo, by who may write it. */
export function knowledgeDetail(writeFrom: KnowledgeWriteFrom = KNOWLEDGE_WRITE_DEFAULT): string {
  return `your own knowledge repo, kept between runs: a git clone at ~/mnt/knowledge on branch run/<run-id> (read-write); commit notes worth keeping there and land them on main with repo_push. It is yours alone; ${writesFromAny(writeFrom) ? "any run may push to it" : "only a run that carried no conversation may push to it (what a conversation taught you stays in that channel's ~/channel/store)"}`;
}
