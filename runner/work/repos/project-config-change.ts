import type { RosterPaths } from "../../ground/config/paths.ts";
import { PROJECT_TOOLCHAIN } from "../../ground/config/project-toolchain.ts";
import { git, resolveRef } from "../../ground/git/git.ts";
import { gatedTarget } from "./push.ts";

/** A project's own roster configuration: what its workers' images install (project-toolchain.ts). */
const PROJECT_CONFIG_DIR = PROJECT_TOOLCHAIN.slice(0, PROJECT_TOOLCHAIN.indexOf("/"));

/**
 * The paths under `.roster/` that a held push would change on its landing
 * branch (the run's own changes: from where it forked to its head). A box may
 * not widen what its own next image installs, whatever trust its pushes have
 * earned: such a push always waits for a human (executors/repo.ts).
 */
export async function projectConfigChanges(
  paths: RosterPaths,
  worker: string,
  repo: string,
  head: string,
): Promise<string[]> {
  const target = gatedTarget(paths, worker, repo);
  const tip = await resolveRef(target.canonical, `refs/heads/${target.policy.branch}`);
  const listed = tip
    ? await git(target.canonical, ["diff", "--name-only", "-z", "--no-renames", `${tip}...${head}`])
    : await git(target.canonical, ["ls-tree", "-r", "--name-only", "-z", head]);
  return listed
    .split("\0")
    .filter((path) => path === PROJECT_CONFIG_DIR || path.startsWith(`${PROJECT_CONFIG_DIR}/`));
}
