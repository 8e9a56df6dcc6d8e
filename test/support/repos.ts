/**
 * Real git repositories for repo_push tests: a canonical bare repo with a
 * starting tree, and a run's clone made by roster's own cloneRunRepos, then
 * re-pointed at host paths so a test can act as the box would (commit, bundle)
 * without a container.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { REPO_DEFAULTS } from "../../runner/ground/config/connections.ts";
import type { RosterPaths } from "../../runner/ground/config/paths.ts";
import { runDir, writeRecord } from "../../runner/records/run-records/run-record.ts";
import { cloneRunRepos } from "../../runner/work/repos/clone.ts";

const GIT_ENV = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_AUTHOR_NAME: "Test",
  GIT_AUTHOR_EMAIL: "test@example.test",
  GIT_COMMITTER_NAME: "Test",
  GIT_COMMITTER_EMAIL: "test@example.test",
};

export function sh(dir: string, args: string[], input?: string): string {
  return execFileSync("git", ["-c", "safe.directory=*", "-C", dir, ...args], {
    env: GIT_ENV,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
    ...(input !== undefined ? { input } : {}),
  });
}

/** A bare repo whose main holds `files`. */
export function makeCanonical(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "roster-repo-"));
  const work = join(root, "seed");
  execFileSync("git", ["init", "-q", "-b", "main", work], { env: GIT_ENV });
  for (const [path, content] of Object.entries(files)) {
    execFileSync("mkdir", ["-p", join(work, path, "..")]);
    writeFileSync(join(work, path), content);
  }
  sh(work, ["add", "-A"]);
  sh(work, ["commit", "-q", "-m", "seed"]);
  const bare = join(root, "canonical.git");
  execFileSync("git", ["clone", "-q", "--bare", work, bare], { env: GIT_ENV });
  return bare;
}

/** A connection file granting `repo` to a worker, gated. */
export async function writeRepoConnection(
  paths: RosterPaths,
  name: string,
  canonical: string,
  worker: string,
  extra = "",
): Promise<void> {
  await mkdir(join(paths.config, "connections"), { recursive: true });
  await writeFile(
    join(paths.config, "connections", `${name}.toml`),
    `kind = "host-repo"\npath = "${canonical}"\nwrite = "gated"\n${extra}\n[grant.${worker}]\n`,
  );
}

export const mainOf = (canonical: string) => sh(canonical, ["rev-parse", "refs/heads/main"]).trim();

/**
 * A run of `worker` with a clone of `connection`, as provisioning makes it, and
 * the run record saying so. Returns the clone's host path, usable from the host.
 */
export async function fakeRunWithClone(options: {
  paths: RosterPaths;
  worker: string;
  runId: string;
  connection: string;
  canonical: string;
}): Promise<string> {
  const dir = runDir(options.paths.state, options.worker, options.runId);
  const home = join(dir, "home");
  await mkdir(home, { recursive: true });
  const cloned = await cloneRunRepos({
    mounts: [
      {
        name: options.connection,
        path: options.canonical,
        readOnly: true,
        kind: "host-repo",
        gated: { ...REPO_DEFAULTS, allowExecutables: false },
      },
    ],
    runDir: dir,
    runId: options.runId,
    home,
    worker: options.worker,
  });
  await writeRecord(dir, {
    id: options.runId,
    worker: options.worker,
    kind: "box",
    state: "running",
    started_at: new Date().toISOString(),
    repos: cloned.record,
  });
  const clone = join(dir, "repos", options.connection);
  // the box's paths mean nothing here: point origin and the borrowed objects at the host's
  sh(clone, ["remote", "set-url", "origin", options.canonical]);
  await writeFile(
    join(clone, ".git/objects/info/alternates"),
    `${resolve(options.canonical, "objects")}\n`,
  );
  return clone;
}

/** Commits everything in the clone and leaves the push bundle where repo_push does. */
export function commitAndBundle(clone: string, runId: string, message = "work"): string {
  sh(clone, ["add", "-A"]);
  sh(clone, ["commit", "-q", "--allow-empty", "-m", message]);
  bundle(clone, runId);
  return sh(clone, ["rev-parse", "HEAD"]).trim();
}

export function bundle(
  clone: string,
  runId: string,
  range = `origin/main..refs/heads/run/${runId}`,
): void {
  sh(clone, ["bundle", "create", "-q", ".git/roster-push.bundle", ...range.split(" ")]);
}
