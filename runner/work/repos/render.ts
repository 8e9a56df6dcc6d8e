import type { RosterPaths } from "../../ground/config/paths.ts";
import { errorMessage } from "../../ground/errors.ts";
import { gitSync } from "../../ground/git/git.ts";
import { gatedTarget, incomingRef } from "./push.ts";

/**
 * A held push as it would land now: the landing branch's move, the commits,
 * the stat and the patch against the branch as it is (so what a human reads is
 * what update-ref will do), truncated by lines with a count of what was left
 * out.
 */
const MAX_PATCH_LINES = 400;
const MAX_PATCH_BYTES = 4 * 1024 * 1024;

export function renderPush(options: {
  paths: RosterPaths;
  worker: string;
  runId: string | null | undefined;
  repo: string;
  head: string;
  message?: string | undefined;
}): string {
  const { paths, worker, runId, repo, head } = options;
  try {
    const target = gatedTarget(paths, worker, repo);
    const branch = target.policy.branch;
    const dir = target.canonical;
    const held = runId ? incomingRef(worker, runId, head) : undefined;
    const heldAt = held ? gitSync(dir, ["rev-parse", "--verify", "--quiet", held]).trim() : "";
    if (heldAt !== head) return `push of ${head} to ${repo}: its commits are no longer held`;
    const main = gitSync(dir, ["rev-parse", "--verify", `refs/heads/${branch}^{commit}`]).trim();
    const lines = [
      `push to ${repo} (${dir}), branch ${branch}: ${main.slice(0, 12)} → ${head.slice(0, 12)}`,
      ...(options.message ? ["", options.message.trim()] : []),
      "",
      "commits:",
      ...gitSync(dir, ["log", "--format=  %h %s (%an)", `${main}..${head}`])
        .trimEnd()
        .split("\n"),
      "",
      gitSync(dir, ["diff", "--stat=100", "--summary", main, head]).trimEnd(),
      "",
    ];
    let patch: string;
    try {
      patch = gitSync(dir, ["diff", "--no-color", "--no-ext-diff", main, head], MAX_PATCH_BYTES);
    } catch {
      patch = `(the patch is over ${MAX_PATCH_BYTES} bytes: read it with git diff ${main.slice(0, 12)} ${head.slice(0, 12)})\n`;
    }
    const patchLines = patch.trimEnd().split("\n");
    lines.push(...patchLines.slice(0, MAX_PATCH_LINES));
    if (patchLines.length > MAX_PATCH_LINES)
      lines.push(`… ${patchLines.length - MAX_PATCH_LINES} more lines of patch not shown`);
    return lines.join("\n");
  } catch (error) {
    return `push of ${head} to ${repo}: can't be shown (${errorMessage(error)})`;
  }
}
