import { chown, mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { BoxEngine } from "../../boundary/box/engine.ts";
import {
  BOX_IMAGE,
  type BoxUser,
  backstopContainerName,
  boxUser,
} from "../../boundary/box/layout.ts";
import { runBox } from "../../boundary/box/lifecycle.ts";
import { loadConfig } from "../../ground/config/load.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { workerView } from "../../ground/config/worker-view.ts";
import { errorMessage } from "../../ground/errors.ts";
import { isAncestor, resolveRef } from "../../ground/git/git.ts";
import { appendJournal } from "../../records/journal/journal.ts";
import type { RepoRecord } from "../../records/run-records/run-record.ts";
import {
  cloneDir,
  cloneMountpoint,
  type GatedRepo,
  gatedRepos,
  originMountpoint,
} from "./clone.ts";
import { refsFingerprint } from "./clone-refs.ts";
import { takeBoxFile } from "./intake.ts";
import { keepInCanonical, openBundle } from "./quarantine.ts";

/**
 * Nothing a run committed is lost. After its box is gone, each writable clone
 * is asked — by a throwaway container with no network, the clone read-only —
 * for the commits that are not on the landing branch; the host never runs git
 * in a tree the box wrote (its config and hooks would run here). What comes
 * back is checked like any bundle and kept in the canonical repo at
 * `refs/roster/quarantine/<worker>/<run-id>`, named in the run record.
 */
const BACKSTOP_DEADLINE_MS = 60_000;
const OUT = "/roster-out";

export const quarantineRefFor = (worker: string, runId: string) =>
  `refs/roster/quarantine/${worker}/${runId}`;

const SCRIPT = `
set -e
cd "$1"
head=$(git rev-parse --verify -q 'HEAD^{commit}') || exit 0
echo "head $head"
count=$(git rev-list --count HEAD --branches --not "$2")
[ "$count" = 0 ] && exit 0
git bundle create --quiet ${OUT}/work.bundle HEAD --branches --not "$2"
echo "bundled $count"
`;

export interface SettleInput {
  engine: BoxEngine;
  image: string;
  paths: RosterPaths;
  worker: string;
  runId: string;
  runDir: string;
  user: BoxUser;
  repos: GatedRepo[];
  records: Record<string, RepoRecord> | undefined;
  /** The worker's box runtime: the container reading what its box wrote gets the same kernel between it and the host. */
  runtime?: string;
}

/** What the backstop reads of a run's record (run-records/run-record.ts holds the whole). */
export interface CrashedRun {
  id: string;
  worker: string;
  repos?: Record<string, RepoRecord>;
}

/**
 * A run whose runner died: its box is gone (reaped), its repos are settled the
 * same way, with the worker's repos as config says now.
 */
export async function settleAfterCrash<Run extends CrashedRun>(
  engine: BoxEngine,
  paths: RosterPaths,
  record: Run,
  dir: string,
): Promise<Run> {
  if (!record.repos) return record;
  const config = loadConfig(paths.config, { vaultDir: paths.vault });
  const view = workerView(config, record.worker, { dataRoot: paths.data });
  const repos = await settleRunRepos({
    engine,
    image: config.org.engine?.image ?? BOX_IMAGE,
    paths,
    worker: record.worker,
    runId: record.id,
    runDir: dir,
    user: boxUser(),
    repos: view ? gatedRepos(view.mounts) : [],
    records: record.repos,
    ...(view ? { runtime: view.box.runtime } : {}),
  });
  return repos ? { ...record, repos } : record;
}

/** Settles every active repo of a run; never throws (a failure is recorded as backstop-failed). */
export async function settleRunRepos(
  input: SettleInput,
): Promise<Record<string, RepoRecord> | undefined> {
  if (!input.records) return undefined;
  const out: Record<string, RepoRecord> = { ...input.records };
  for (const [connection, record] of Object.entries(input.records)) {
    if (record.state !== "active") continue;
    const repo = input.repos.find((candidate) => candidate.connection === connection);
    try {
      if (!repo) throw new Error(`connection "${connection}" is no longer a gated repo`);
      out[connection] = await settleOne(input, repo, record);
    } catch (error) {
      out[connection] = { ...record, state: "backstop-failed", error: errorMessage(error) };
    }
  }
  return out;
}

async function settleOne(
  input: SettleInput,
  repo: GatedRepo,
  record: RepoRecord,
): Promise<RepoRecord> {
  const { connection, canonical, policy } = repo;
  // neither HEAD nor a branch moved: nothing committed for the container to find
  if (record.refs && (await refsFingerprint(cloneDir(input.runDir, connection))) === record.refs)
    return { ...record, state: "unchanged" };
  const main = await resolveRef(canonical, `refs/heads/${policy.branch}`);
  if (!main) throw new Error(`${canonical} has no branch "${policy.branch}"`);
  const outDir = join(input.runDir, "repos", ".backstop", connection);
  await rm(outDir, { recursive: true, force: true });
  await mkdir(outDir, { recursive: true });
  if (process.getuid?.() === 0) await chown(outDir, input.user.uid, input.user.gid);
  let said = "";
  const outcome = await runBox(
    input.engine,
    {
      image: input.image,
      name: backstopContainerName(input.runId, connection),
      cmd: ["sh", "-c", SCRIPT, "backstop", cloneMountpoint(connection), main],
      user: input.user,
      env: {
        HOME: "/tmp",
        GIT_CONFIG_COUNT: "1",
        GIT_CONFIG_KEY_0: "safe.directory",
        GIT_CONFIG_VALUE_0: "*",
      },
      mounts: [
        {
          source: cloneDir(input.runDir, connection),
          target: cloneMountpoint(connection),
          readOnly: true,
        },
        { source: canonical, target: originMountpoint(connection), readOnly: true },
        { source: outDir, target: OUT, readOnly: false },
      ],
      limits: { pids: 64, memoryBytes: 512 * 1024 ** 2, cpus: 1 },
      ...(input.runtime ? { runtime: input.runtime } : {}),
    },
    {
      deadlineMs: BACKSTOP_DEADLINE_MS,
      onStdout: (chunk) => {
        if (said.length < 4096) said += chunk.toString("utf8");
      },
    },
  );
  if (outcome.endedBy !== "exit" || outcome.exitCode !== 0)
    throw new Error(`the clone could not be read (${outcome.endedBy}, exit ${outcome.exitCode})`);
  const head = /^head ([0-9a-f]{40})$/m.exec(said)?.[1];
  if (!/^bundled \d+$/m.test(said)) {
    if (!head || head === record.base_commit) return { ...record, state: "unchanged" };
    return { ...record, state: "pushed", produced_commit: head };
  }
  return quarantine(input, repo, record, main, outDir);
}

async function quarantine(
  input: SettleInput,
  repo: GatedRepo,
  record: RepoRecord,
  main: string,
  outDir: string,
): Promise<RepoRecord> {
  const scratch = join(input.paths.state, "repo-scratch");
  await mkdir(scratch, { recursive: true });
  const bundle = join(scratch, `backstop-${input.runId}-${repo.connection}.bundle`);
  try {
    await takeBoxFile({
      file: join(outDir, "work.bundle"),
      within: outDir,
      maxBytes: repo.policy.maxPushBytes,
      dest: bundle,
    });
    const held = await openBundle({ canonical: repo.canonical, bundle, scratch });
    try {
      // the worker's HEAD first; else the first branch with work not on the landing branch
      const names = [...held.heads.keys()].sort((a, b) =>
        a === "HEAD" ? -1 : b === "HEAD" ? 1 : 0,
      );
      let chosen: { index: number; sha: string } | undefined;
      for (const name of names) {
        const sha = held.heads.get(name) ?? "";
        if (!(await isAncestor(held.dir, sha, main))) {
          chosen = { index: [...held.heads.keys()].indexOf(name), sha };
          break;
        }
      }
      if (!chosen) return { ...record, state: "pushed" };
      const ref = quarantineRefFor(input.worker, input.runId);
      await keepInCanonical(repo.canonical, held, chosen.index, ref);
      appendJournal(input.paths, {
        worker: input.worker,
        run_id: input.runId,
        kind: "repo-quarantined",
        summary: `unpushed work in ${repo.connection} kept at ${ref}`,
        detail: { repo: repo.connection, ref, head: chosen.sha },
      });
      return { ...record, state: "quarantined", produced_commit: chosen.sha, quarantine_ref: ref };
    } finally {
      await held.remove();
    }
  } finally {
    await rm(bundle, { force: true });
    await rm(outDir, { recursive: true, force: true });
  }
}
