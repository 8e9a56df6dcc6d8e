import { execFileSync } from "node:child_process";
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { initRoots } from "../../runner/cli/does/init.ts";
import { type RosterPaths, rosterPaths } from "../../runner/ground/config/paths.ts";
import { PROJECT_ROOT } from "../../runner/ground/version.ts";
import { storeCredential } from "../../runner/work/runs/credentials.ts";

/**
 * A deployment made from test/fixtures/public-roster: the config root a user
 * of the public roster wrote (its spellings only), copied over what `roster
 * init` made, with the host paths its connections name made real (a notes
 * folder, a bare research repo) and each connection's secret in the vault.
 * Not a double: the files are the fixture's, the deployment is a real one.
 */
export const PUBLIC_FIXTURE = join(PROJECT_ROOT, "test/fixtures/public-roster/config");

export interface PublicDeployment {
  root: string;
  paths: RosterPaths;
  /** What the tests run roster with: the root, and no host pi settings to read. */
  env: NodeJS.ProcessEnv;
}

export async function publicDeployment(): Promise<PublicDeployment> {
  const root = await mkdtemp(join(tmpdir(), "roster-public-deployment-"));
  const paths = rosterPaths({ ROSTER_ROOT: root });
  await initRoots(paths);
  // the fixture is the whole config: init's example worker and org.toml give way to it
  await cp(PUBLIC_FIXTURE, paths.config, { recursive: true, force: true });
  const initWorkers = await readdir(join(paths.config, "workers"));
  for (const worker of initWorkers)
    if (worker !== "dobby")
      await rm(join(paths.config, "workers", worker), { recursive: true, force: true });
  const connections = join(paths.config, "connections");
  for (const file of await readdir(connections)) {
    const path = join(connections, file);
    await writeFile(path, (await readFile(path, "utf8")).replaceAll("{{ROOT}}", root));
  }
  await mkdir(join(root, "shared-notes"));
  await writeFile(join(root, "shared-notes/readme.md"), "The notes say: the door holds.\n");
  // the research repo, with a first commit on main (a run starts from main)
  const seed = join(root, "research-seed");
  const git = (...args: string[]) =>
    execFileSync("git", ["-c", "user.name=Ops", "-c", "user.email=ops@example.test", ...args]);
  git("init", "-q", "-b", "main", seed);
  await writeFile(join(seed, "index.md"), "# Research\n");
  git("-C", seed, "add", "index.md");
  git("-C", seed, "commit", "-q", "-m", "first");
  git("clone", "-q", "--bare", seed, join(root, "research-kb.git"));
  await rm(seed, { recursive: true, force: true });
  await storeCredential(paths.vault, "github", { token: "github-token-from-the-vault" });
  await storeCredential(paths.vault, "discord", { token: "discord-bot-token" });
  await storeCredential(paths.vault, "tracker", { key: "tracker-key-from-the-vault" });
  await storeCredential(paths.vault, "anthropic", { key: "anthropic-key-from-the-vault" });
  const piDir = join(root, "no-pi");
  await mkdir(piDir);
  return { root, paths, env: { ROSTER_ROOT: root, PI_CODING_AGENT_DIR: piDir } };
}
