import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, rename, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { knowledgePath } from "../../ground/config/knowledge.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { git } from "../../ground/git/git.ts";

/**
 * Makes a worker's knowledge repo (data/workers/<w>/knowledge.git) when it has
 * none: a bare repository whose main holds one README commit, so a run can
 * clone it from its first day. Built aside and renamed into place, so two
 * runs starting at once never see half a repository; the loser of that race
 * throws its copy away. A repo that exists is left exactly as it is.
 */
const README = `# Knowledge

What this worker has learnt and chosen to keep, one commit at a time.
Organise it as you like; every change lands through repo_push.
`;

export async function ensureKnowledgeRepo(paths: RosterPaths, worker: string): Promise<boolean> {
  const repo = knowledgePath(paths.data, worker);
  if (existsSync(repo)) return false;
  await mkdir(dirname(repo), { recursive: true });
  const aside = join(dirname(repo), `.knowledge-${randomUUID()}.git`);
  try {
    await git(dirname(repo), ["init", "--quiet", "--bare", "--initial-branch=main", aside]);
    const blob = (await git(aside, ["hash-object", "-w", "--stdin"], { input: README })).trim();
    const tree = (
      await git(aside, ["mktree"], { input: `100644 blob ${blob}\tREADME.md\n` })
    ).trim();
    const commit = (
      await git(aside, ["commit-tree", tree, "-m", `knowledge repo of ${worker}`])
    ).trim();
    await git(aside, ["update-ref", "refs/heads/main", commit]);
    try {
      await rename(aside, repo);
    } catch (error) {
      // another run made it first: theirs stands
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== "ENOTEMPTY" && code !== "EEXIST") throw error;
      return false;
    }
    return true;
  } finally {
    await rm(aside, { recursive: true, force: true });
  }
}
