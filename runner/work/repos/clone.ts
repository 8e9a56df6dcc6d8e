import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { BoxMount } from "../../boundary/box/container-spec.ts";
import { BOX_HOME } from "../../boundary/box/layout.ts";
import type { ConnectionMount, RepoPolicy } from "../../ground/config/connections.ts";
import { RosterError } from "../../ground/errors.ts";
import { gitSteps, resolveRef } from "../../ground/git/git.ts";
import type { RepoRecord } from "../../records/run-records/run-record.ts";
import { refsFingerprint } from "./clone-refs.ts";

/**
 * A gated repo in a run: the host clones the canonical bare repo into the run's
 * folder (`<run>/repos/<conn>`, on branch `run/<run-id>`), the box gets that
 * clone read-write at ~/mnt/<conn> and the canonical repo read-only at
 * ~/mnt/.origins/<conn> as `origin`, so it can fetch and rebase but never
 * write where work lands. The clone borrows the canonical objects
 * (`--shared`) instead of copying them: an alternates path relative to the
 * clone resolves to the origin mount inside the box.
 */
export interface RunRepo {
  connection: string;
  /** Where the box sees the clone. */
  dir: string;
  /** The landing branch's commit when the run began. */
  base: string;
  branch: string;
  /** The branch pushes land on in the canonical repo. */
  target: string;
  mode: "write";
}

export interface GatedRepo {
  connection: string;
  canonical: string;
  policy: RepoPolicy;
}

export const originMountpoint = (connection: string) => `${BOX_HOME}/mnt/.origins/${connection}`;
export const cloneMountpoint = (connection: string) => `${BOX_HOME}/mnt/${connection}`;
export const runBranch = (runId: string) => `run/${runId}`;
export const cloneDir = (runDir: string, connection: string) => join(runDir, "repos", connection);

export function gatedRepos(mounts: ConnectionMount[]): GatedRepo[] {
  return mounts.flatMap((mount) =>
    mount.gated ? [{ connection: mount.name, canonical: mount.path, policy: mount.gated }] : [],
  );
}

export interface ClonedRepos {
  mounts: BoxMount[];
  repos: RunRepo[];
  record: Record<string, RepoRecord>;
}

/** Whose clone of which repo: what a clone made ahead (spare-clones.ts) must match to be taken. */
export interface CloneKey {
  /** Commits made in the clone are the worker's. */
  worker: string;
  connection: string;
  canonical: string;
  /** The branch the clone starts from. */
  branch: string;
}

/**
 * Clones made before their run (a server keeps them: spare-clones.ts). `take`
 * moves one to `dest` on the run's branch and answers its base, or answers
 * undefined (none, or the branch has moved since) for the run to clone itself;
 * `want` asks for the next.
 */
export interface AheadClones {
  take(key: CloneKey, dest: string, runBranch: string): Promise<string | undefined>;
  want(key: CloneKey): void;
}

/**
 * The git steps that clone `key` into `dest` with origin pointed at the box's
 * read-only mount (objects borrowed through it) and print the commit it has:
 * the run's base. The clone's commits are the worker's, said as it is made.
 * With `runBranch`, the run's branch is made right after the clone.
 */
export function cloneSteps(
  key: CloneKey,
  dest: string,
  runBranch?: string,
): { dir: string; args: string[] }[] {
  return [
    {
      dir: dirname(dest),
      args: [
        "clone",
        "--quiet",
        "--shared",
        "--branch",
        key.branch,
        "--config",
        `user.name=${key.worker}`,
        "--config",
        `user.email=${key.worker}@workers.roster.invalid`,
        key.canonical,
        dest,
      ],
    },
    ...(runBranch ? [{ dir: dest, args: ["checkout", "--quiet", "-b", runBranch] }] : []),
    { dir: dest, args: ["remote", "set-url", "origin", originMountpoint(key.connection)] },
    { dir: dest, args: ["rev-parse", "--verify", "HEAD^{commit}"] },
  ];
}

export async function cloneRunRepos(options: {
  mounts: ConnectionMount[];
  runDir: string;
  runId: string;
  home: string;
  /** Commits made in the clone are the worker's. */
  worker: string;
  /** A server's clones made ahead: one is taken when it is current. */
  spares?: AheadClones | undefined;
}): Promise<ClonedRepos> {
  const out: ClonedRepos = { mounts: [], repos: [], record: {} };
  for (const repo of gatedRepos(options.mounts)) {
    const { connection, canonical, policy } = repo;
    const dest = cloneDir(options.runDir, connection);
    await mkdir(join(options.runDir, "repos"), { recursive: true });
    const branch = runBranch(options.runId);
    const key: CloneKey = { worker: options.worker, connection, canonical, branch: policy.branch };
    const base =
      (await options.spares?.take(key, dest, branch)) ?? (await cloneNow(key, dest, branch));
    options.spares?.want(key);
    await writeFile(
      join(dest, ".git/objects/info/alternates"),
      `../../../.origins/${connection}/objects\n`,
    );
    await mkdir(join(options.home, "mnt/.origins", connection), { recursive: true });
    out.mounts.push(
      { source: dest, target: cloneMountpoint(connection), readOnly: false },
      { source: canonical, target: originMountpoint(connection), readOnly: true },
    );
    out.repos.push({
      connection,
      dir: cloneMountpoint(connection),
      base,
      branch,
      target: policy.branch,
      mode: "write",
    });
    const refs = await refsFingerprint(dest);
    out.record[connection] = {
      base_commit: base,
      mode: "write",
      state: "active",
      ...(refs ? { refs } : {}),
    };
  }
  if (out.repos.length) {
    // origin is owned by the host's user, and git's upload-pack (run for `git fetch origin`)
    // reads only global config, not the environment's: trusting it is said here
    await writeFile(join(options.home, ".gitconfig"), "[safe]\n\tdirectory = *\n");
  }
  return out;
}

/**
 * The clone made now, in one process on the path every run's start waits on:
 * the clone, the run branch, origin and the base (the commit the clone has,
 * so it is the one the run starts from).
 */
async function cloneNow(key: CloneKey, dest: string, branch: string): Promise<string> {
  return gitSteps(cloneSteps(key, dest, branch)).then(
    (out) => out.trim(),
    async (error: unknown) => {
      if (await resolveRef(key.canonical, `refs/heads/${key.branch}`)) throw error;
      throw new RosterError(
        `connection "${key.connection}": ${key.canonical} has no branch "${key.branch}" to start a run from`,
        { exitCode: 2 },
      );
    },
  );
}
