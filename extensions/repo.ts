/**
 * repo_push: land this run's commits on a gated repository. Registered only
 * when the run has a writable clone (ROSTER_REPOS_JSON). The tool checks the
 * clone is ready, bundles `origin/<branch>..run/<run-id>` into the clone's
 * .git and proposes the push; the host opens the bundle in quarantine, checks
 * it and lands it fast-forward only (or holds it for a human). Nothing here
 * decides anything.
 */
import { execFile } from "node:child_process";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "@sinclair/typebox";
import { propose } from "./lib/action-words.ts";
import { guarded } from "./lib/tool-guard.ts";

export const REPO_PUSH_INTENT = "repo-push";
const BUNDLE = ".git/roster-push.bundle";

interface RunRepo {
  connection: string;
  dir: string;
  branch: string;
  target: string;
  mode: string;
}

function writableRepos(env: NodeJS.ProcessEnv): RunRepo[] {
  try {
    const parsed: unknown = JSON.parse(env.ROSTER_REPOS_JSON ?? "[]");
    if (!Array.isArray(parsed)) return [];
    return parsed.filter(
      (repo): repo is RunRepo =>
        typeof repo === "object" &&
        repo !== null &&
        typeof repo.connection === "string" &&
        typeof repo.dir === "string" &&
        typeof repo.branch === "string" &&
        typeof repo.target === "string" &&
        repo.mode === "write",
    );
  } catch {
    return [];
  }
}

function gitIn(dir: string, args: string[], signal?: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      "git",
      ["-C", dir, ...args],
      { maxBuffer: 8 * 1024 * 1024, timeout: 300_000, ...(signal ? { signal } : {}) },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`git ${args[0]}: ${String(stderr).trim() || error.message}`));
        else resolve(String(stdout));
      },
    );
  });
}

const text = (words: string, isError = true) => ({
  content: [{ type: "text" as const, text: words }],
  details: {},
  ...(isError ? { isError: true } : {}),
});

/**
 * Checks the clone is ready to push — a clean tree, HEAD on the run branch,
 * commits beyond the target — then bundles those commits for the host. A
 * refusal says what to fix; nothing is proposed then.
 */
async function bundleRunBranch(
  repo: RunRepo,
  signal: AbortSignal | undefined,
): Promise<{ head: string } | { refusal: string }> {
  const dirty = (await gitIn(repo.dir, ["status", "--porcelain"], signal)).trim();
  if (dirty)
    return {
      refusal: `error: ${repo.dir} has uncommitted changes; commit them (or drop them) first. Nothing was proposed.\n${dirty.split("\n").slice(0, 20).join("\n")}`,
    };
  const head = (await gitIn(repo.dir, ["rev-parse", "HEAD"], signal)).trim();
  const branchHead = (
    await gitIn(repo.dir, ["rev-parse", `refs/heads/${repo.branch}`], signal)
  ).trim();
  if (head !== branchHead)
    return {
      refusal: `error: pushes go from branch ${repo.branch}, and HEAD is elsewhere; bring your commits there (git checkout ${repo.branch} && git merge --ff-only <yours>). Nothing was proposed.`,
    };
  const ahead = Number(
    (await gitIn(repo.dir, ["rev-list", "--count", `origin/${repo.target}..HEAD`], signal)).trim(),
  );
  if (!ahead)
    return {
      refusal: `error: nothing to push: ${repo.branch} has no commits beyond origin/${repo.target}. Commit your work first. Nothing was proposed.`,
    };
  await gitIn(
    repo.dir,
    ["bundle", "create", "--quiet", BUNDLE, `origin/${repo.target}..refs/heads/${repo.branch}`],
    signal,
  );
  return { head };
}

function loadRepo(pi: ExtensionAPI): void {
  const repos = writableRepos(process.env);
  if (!repos.length) return;
  const names = repos.map((repo) => repo.connection);
  pi.registerTool({
    name: "repo_push",
    label: "Push commits",
    description:
      `Land the commits of your clone's run branch on the repository's landing branch (fast-forward only). ` +
      // no run-specific word here (the run branch's name): tools come before the prompt, and one
      // changing byte would keep a provider's prompt cache from every token after it
      `Writable repos: ${repos.map((repo) => `${repo.connection} at ${repo.dir} (lands on ${repo.target})`).join("; ")}. ` +
      "Your clone is checked out on its run branch (git branch --show-current); commit there. " +
      "Commit first (a clean tree is required). If the answer says stale, run `git fetch origin && git rebase origin/<branch>` and push again. " +
      "The answer says done (landed), pending (a human decides), denied or error (with the reason).",
    parameters: Type.Object({
      repo: Type.String({ description: `the repo's name: ${names.join(", ")}` }),
      message: Type.Optional(
        Type.String({
          maxLength: 4000,
          description: "what the push does and why, for whoever approves it",
        }),
      ),
      confirm_bulk_delete: Type.Optional(
        Type.Boolean({
          description:
            "only after a refusal for deleting many files, when that is meant: it always waits for a human",
        }),
      ),
    }),
    async execute(_id, params, signal) {
      const repo = repos.find((candidate) => candidate.connection === params.repo);
      if (!repo)
        return text(
          `error: no writable repo named "${params.repo}"; you can push to: ${names.join(", ")}. Nothing was proposed.`,
        );
      try {
        const ready = await bundleRunBranch(repo, signal);
        if ("refusal" in ready) return text(ready.refusal);
        return propose(
          "repo_push",
          REPO_PUSH_INTENT,
          {
            repo: repo.connection,
            head: ready.head,
            message: params.message,
            confirm_bulk_delete: params.confirm_bulk_delete,
          },
          params.message,
          { signal, timeoutMs: 300_000 },
        );
      } catch (error) {
        return text(
          `error: ${error instanceof Error ? error.message : String(error)}. Nothing was proposed.`,
        );
      }
    },
  });
}

// every tool call runs guarded: an error its work raises later ends that call, not the run
export default guarded("repo", loadRepo);
