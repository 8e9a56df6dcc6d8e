import { join } from "node:path";
import { type ConnectionMount, REPO_DEFAULTS } from "./connections.ts";

/**
 * Every worker's own knowledge repo: a gated host-repo connection named
 * `knowledge` that no config file declares. Its bare repository lives with the
 * worker's data (data/workers/<w>/knowledge.git), so the operator's config is
 * never written behind their back; it is granted to that worker alone, takes
 * pushes from any run (write_from = "any": what a worker learnt in a
 * conversation may be kept here) and is not scanned for participants' names,
 * since remembering people is what it is for. Pushes still go through
 * repo_push and its checks, and through the trust the operator gives
 * `repo-push`.
 */
export const KNOWLEDGE_REPO = "knowledge";

export const knowledgePath = (dataRoot: string, worker: string) =>
  join(dataRoot, "workers", worker, "knowledge.git");

export function knowledgeMount(dataRoot: string, worker: string): ConnectionMount {
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
      writeFrom: "any",
      scanParticipants: false,
    },
  };
}

export const KNOWLEDGE_DETAIL =
  "your own knowledge repo, kept between runs: a git clone at ~/mnt/knowledge on branch run/<run-id> (read-write); commit notes worth keeping there and land them on main with repo_push. It is yours alone, and any run may push to it";
