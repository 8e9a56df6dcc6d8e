import { randomUUID } from "node:crypto";
import { mkdir, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { RepoPolicy } from "../../ground/config/connections.ts";
import { loadConfig } from "../../ground/config/load.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { workerView } from "../../ground/config/worker-view.ts";
import { withFileLockWaiting } from "../../ground/files/file-lock.ts";
import { git, isAncestor, resolveRef } from "../../ground/git/git.ts";
import type { RepoRecord } from "../../records/run-records/run-record.ts";
import { CLEAN_ROOM, cleanRoomRefusal, participantFindings } from "./clean-room.ts";
import { cloneDir, runBranch } from "./clone.ts";
import { IntakeError, takeBoxFile } from "./intake.ts";
import type { RunContext } from "./provenance.ts";
import { rangeProblems, treeBytes } from "./push-rules.ts";
import { BundleRefused, keepInCanonical, openBundle } from "./quarantine.ts";
import { secretFindings } from "./secrets.ts";

/**
 * repo_push on the host. Proposing: the run's bundle (left in its clone's
 * .git) is copied out, opened in a quarantine repo, and checked — one branch,
 * `run/<run-id>`, at the head the box named; a fast-forward of the landing
 * branch; every commit's paths, modes and sizes; no secret-looking content;
 * deletions within bounds; the clean-room rule (clean-room.ts) — and only
 * then are its objects fetched into the canonical repo, held at an incoming
 * ref, so what a human approves can no longer change. Landing: in the repo's
 * lane (one push at a time, across processes), the same rules against the
 * branch as it is now, then a compare-and-swap `update-ref`: a branch that
 * moved meanwhile is never overwritten.
 */
export class PushRefused extends Error {}

/** The file repo_push leaves in the clone for the host to take. */
export const PUSH_BUNDLE = ".git/roster-push.bundle";
const LANE_WAIT_MS = 120_000;

export interface PushRequest {
  paths: RosterPaths;
  worker: string;
  runId: string | null | undefined;
  repo: string;
  head: string;
  confirmBulkDelete: boolean;
  /** The run's folder, holding its clones; undefined without a run. */
  runDir: string | undefined;
  /** How the run cloned `repo`, from its record: only a "write" clone can push. */
  cloneMode: RepoRecord["mode"] | undefined;
  /**
   * The run's provenance as it stands now (runs/run-context.ts), handed in by
   * the caller that knows the runs: asked when the push is checked and again
   * when it lands, so someone who spoke meanwhile counts.
   */
  readRunContext: (paths: RosterPaths, worker: string, runId: string) => RunContext;
}

export interface GatedTarget {
  canonical: string;
  policy: RepoPolicy;
  /** The most the repo's tree may hold once the push lands ([knowledge] max_repo_bytes); unset: no cap. */
  maxRepoBytes?: number;
}

export const incomingRef = (worker: string, runId: string, head: string) =>
  `refs/roster/incoming/${worker}/${runId}/${head}`;

/** The gated repo a worker may push to by this name, as config says now. */
export function gatedTarget(paths: RosterPaths, worker: string, repo: string): GatedTarget {
  const config = loadConfig(paths.config, { vaultDir: paths.vault });
  // the worker's view, so its own knowledge repo is found the way a declared one is
  const view = workerView(config, worker, { dataRoot: paths.data });
  const mount = view?.mounts.find((candidate) => candidate.name === repo);
  if (!mount && view?.knowledge.enabled === false)
    throw new PushRefused(
      `payload.repo: gated repos are switched off for ${worker} ([knowledge] enabled = false)`,
    );
  if (!mount)
    throw new PushRefused(`payload.repo: no repo named "${repo}" is granted to ${worker}`);
  if (!mount.gated)
    throw new PushRefused(
      `payload.repo: "${repo}" is not writable: its connection does not say write = "gated"`,
    );
  const maxRepoBytes = view?.knowledge.max_repo_bytes;
  return {
    canonical: mount.path,
    policy: mount.gated,
    ...(maxRepoBytes !== undefined ? { maxRepoBytes } : {}),
  };
}

function describe(problems: string[]): string {
  const shown = problems.slice(0, 5).join("; ");
  return problems.length > 5 ? `${shown}; and ${problems.length - 5} more` : shown;
}

const stale = (branch: string, main: string) =>
  `stale: ${branch} is now ${main}; fetch origin, rebase your commits onto origin/${branch} and push again`;

/** Checks a proposal end to end and, when it passes, holds its commits in the canonical repo. */
export async function checkAndHold(
  request: PushRequest,
): Promise<{ commits: number; files: number; deletions: number }> {
  const { paths, worker, runId, repo, head } = request;
  if (!runId) throw new PushRefused("only a run can push: this proposal has no run");
  const target = gatedTarget(paths, worker, repo);
  // the clean-room rule first: a run that may not push here at all is told so before any work
  const context = request.readRunContext(paths, worker, runId);
  const outOfRoom = cleanRoomRefusal(repo, target.policy, context);
  if (outOfRoom) throw new PushRefused(outOfRoom);
  if (!request.runDir || request.cloneMode !== "write")
    throw new PushRefused(`payload.repo: this run has no clone of "${repo}" to push from`);
  const scratch = join(paths.state, "repo-scratch");
  await mkdir(scratch, { recursive: true });
  const bundle = join(scratch, `b-${randomUUID()}.bundle`);
  try {
    const clone = cloneDir(request.runDir, repo);
    try {
      await takeBoxFile({
        file: join(clone, PUSH_BUNDLE),
        within: clone,
        maxBytes: target.policy.maxPushBytes,
        dest: bundle,
      });
    } catch (error) {
      if (error instanceof IntakeError) throw new PushRefused(error.message);
      throw error;
    }
    let quarantine: Awaited<ReturnType<typeof openBundle>>;
    try {
      quarantine = await openBundle({ canonical: target.canonical, bundle, scratch });
    } catch (error) {
      if (error instanceof BundleRefused) throw new PushRefused(error.message);
      throw error;
    }
    try {
      const expected = `refs/heads/${runBranch(runId)}`;
      const names = [...quarantine.heads.keys()];
      if (names.length !== 1 || names[0] !== expected)
        throw new PushRefused(
          `the bundle must carry exactly ${expected}; it names ${names.join(", ")}`,
        );
      if (quarantine.heads.get(expected) !== head)
        throw new PushRefused(
          `payload.head: the bundle's ${runBranch(runId)} is ${quarantine.heads.get(expected)}, not ${head}`,
        );
      const facts = await checkRange(quarantine.dir, target, head, request.confirmBulkDelete);
      const findings = await secretFindings(
        quarantine.dir,
        facts.blobs,
        target.policy.maxPushBytes,
      );
      if (findings.length) throw new PushRefused(`refused: ${describe(findings)}`);
      await refuseParticipants(quarantine.dir, target, context, facts, head);
      await keepInCanonical(target.canonical, quarantine, 0, incomingRef(worker, runId, head));
      return { commits: facts.commits, files: facts.net.length, deletions: facts.deletions };
    } finally {
      await quarantine.remove();
    }
  } finally {
    await rm(bundle, { force: true });
  }
}

/** The rules against the landing branch as it is now (in `dir`, which has every object needed). */
async function checkRange(dir: string, target: GatedTarget, head: string, confirmed: boolean) {
  const { branch } = target.policy;
  const main = await resolveRef(target.canonical, `refs/heads/${branch}`);
  if (!main) throw new PushRefused(`the canonical repo has no branch "${branch}"`);
  if (main === head || (await isAncestor(dir, head, main)))
    throw new PushRefused(`nothing to push: ${head} is already on ${branch}`);
  if (!(await isAncestor(dir, main, head))) throw new PushRefused(stale(branch, main));
  const { facts, problems } = await rangeProblems(dir, main, head, target.policy);
  if (problems.length) throw new PushRefused(`refused: ${describe(problems)}`);
  if (target.maxRepoBytes !== undefined) {
    const bytes = await treeBytes(dir, head);
    if (bytes > target.maxRepoBytes)
      throw new PushRefused(
        `refused: with this push the repo would hold ${bytes} bytes, over [knowledge] max_repo_bytes = ${target.maxRepoBytes}`,
      );
  }
  const limit = target.policy.maxDeletionsUngated;
  if (facts.deletions > limit && !confirmed)
    throw new PushRefused(
      `refused: the push deletes ${facts.deletions} files, more than ${limit} (max_deletions_ungated); if that is meant, propose it again with confirm_bulk_delete: true and a human will decide`,
    );
  return { ...facts, main };
}

/** The clean-room rule's participant scan, for a repo that has it and a run that had people. */
async function refuseParticipants(
  dir: string,
  target: GatedTarget,
  context: RunContext,
  facts: { main: string; blobs: Array<{ path: string }> },
  head: string,
): Promise<void> {
  if (!target.policy.scanParticipants || !context.people.length) return;
  const named = await participantFindings({
    dir,
    base: facts.main,
    head,
    paths: facts.blobs.map((blob) => blob.path),
    people: context.people,
    maxBytes: target.policy.maxPushBytes,
  });
  if (named.length) throw new PushRefused(`refused by the ${CLEAN_ROOM}: ${describe(named)}`);
}

export interface Landed {
  [key: string]: unknown;
  status: "landed" | "unchanged";
  branch: string;
  head: string;
  previous: string;
  commits?: number;
  files?: number;
  deletions?: number;
}

/** The lock file of a repo's lane: whoever holds it is the one landing on that repo now. */
export function laneLock(paths: RosterPaths, repo: string): string {
  return join(paths.state, "locks", `repo-${repo}.lock`);
}

/** Lands a held proposal: fast-forward only, compare-and-swap, one push per repo at a time. */
export async function land(request: PushRequest): Promise<Landed> {
  const { paths, worker, runId, repo, head } = request;
  if (!runId) throw new PushRefused("only a run can push: this proposal has no run");
  const target = gatedTarget(paths, worker, repo);
  const lock = laneLock(paths, repo);
  await mkdir(dirname(lock), { recursive: true });
  return withFileLockWaiting(lock, `repo "${repo}"`, LANE_WAIT_MS, async () => {
    const held = incomingRef(worker, runId, head);
    if ((await resolveRef(target.canonical, held)) !== head)
      throw new PushRefused("the proposed commits are no longer held; push again");
    const branch = target.policy.branch;
    const main = await resolveRef(target.canonical, `refs/heads/${branch}`);
    if (main && (main === head || (await isAncestor(target.canonical, head, main)))) {
      await git(target.canonical, ["update-ref", "-d", held]);
      return { status: "unchanged", branch, head, previous: main };
    }
    let facts: Awaited<ReturnType<typeof checkRange>>;
    try {
      // the rule again as config and the conversation stand now (approval may come much later)
      const context = request.readRunContext(paths, worker, runId);
      const outOfRoom = cleanRoomRefusal(repo, target.policy, context);
      if (outOfRoom) throw new PushRefused(outOfRoom);
      facts = await checkRange(target.canonical, target, head, request.confirmBulkDelete);
      await refuseParticipants(target.canonical, target, context, facts, head);
    } catch (error) {
      // a refused landing is final for these commits: the worker proposes again after a rebase
      if (error instanceof PushRefused) await git(target.canonical, ["update-ref", "-d", held]);
      throw error;
    }
    await git(target.canonical, [
      "update-ref",
      "-m",
      `roster: repo_push by ${worker} (run ${runId})`,
      `refs/heads/${branch}`,
      head,
      facts.main,
    ]);
    await git(target.canonical, ["update-ref", "-d", held]);
    return {
      status: "landed",
      branch,
      head,
      previous: facts.main,
      commits: facts.commits,
      files: facts.net.length,
      deletions: facts.deletions,
    };
  });
}
