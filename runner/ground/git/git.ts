import { spawn, spawnSync } from "node:child_process";

/**
 * git on the host, only ever in repositories the host owns (the canonical bare
 * repo, a quarantine repo, a fresh clone before any box has it): never in a
 * tree a box has written, whose config and hooks would run here. No system or
 * user config is read and nothing prompts, so a result does not depend on
 * whose machine this is.
 */
export class GitError extends Error {
  constructor(
    readonly args: string[],
    readonly code: number | null,
    readonly stderr: string,
  ) {
    super(
      `git ${args.slice(0, 3).join(" ")} failed: ${stderr.trim().split("\n").slice(-2).join(" ") || `exit ${code}`}`,
    );
  }
}

const GIT_ENV: NodeJS.ProcessEnv = {
  PATH: process.env.PATH ?? "/usr/bin:/bin",
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_TERMINAL_PROMPT: "0",
  GIT_AUTHOR_NAME: "roster",
  GIT_AUTHOR_EMAIL: "roster@localhost",
  GIT_COMMITTER_NAME: "roster",
  GIT_COMMITTER_EMAIL: "roster@localhost",
  LC_ALL: "C",
};

export interface GitOptions {
  /** Bytes written to git's stdin. */
  input?: string | Buffer;
  /** Refuse (kill) past this many bytes of output (default 64 MiB). */
  maxBytes?: number;
  /** Kill after this long (default 5 minutes). */
  timeoutMs?: number;
}

/** The flags every host git runs with: no repository's hooks, no ownership refusal. */
const GIT_FLAGS = ["-c", "safe.directory=*", "-c", "core.hooksPath=/dev/null"];

/** Runs git in `dir` (`-C`), resolving with stdout as bytes; rejects with GitError on a non-zero exit. */
export function gitBytes(dir: string, args: string[], options: GitOptions = {}): Promise<Buffer> {
  return runGit("git", [...GIT_FLAGS, "-C", dir, ...args], args, options);
}

/**
 * Runs `file` (git, or a shell running git) in git's environment, its output
 * bounded; a failure is a GitError naming `named`.
 */
function runGit(
  file: string,
  argv: string[],
  named: string[],
  options: GitOptions,
): Promise<Buffer> {
  const maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
  return new Promise((resolve, reject) => {
    const child = spawn(file, argv, {
      env: GIT_ENV,
      stdio: ["pipe", "pipe", "pipe"],
      timeout: options.timeoutMs ?? 5 * 60_000,
    });
    const out: Buffer[] = [];
    let size = 0;
    let stderr = "";
    let overflow = false;
    child.stdout.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        overflow = true;
        child.kill("SIGKILL");
      } else out.push(chunk);
    });
    child.stderr.on("data", (chunk: Buffer) => {
      if (stderr.length < 16_384) stderr += chunk.toString("utf8");
    });
    child.once("error", (error) => reject(new GitError(named, null, error.message)));
    child.once("close", (code) => {
      if (overflow) reject(new GitError(named, code, `output over ${maxBytes} bytes`));
      else if (code === 0) resolve(Buffer.concat(out));
      else reject(new GitError(named, code, stderr));
    });
    child.stdin.on("error", () => {}); // git may exit before reading all of its input
    child.stdin.end(options.input);
  });
}

export async function git(dir: string, args: string[], options: GitOptions = {}): Promise<string> {
  return (await gitBytes(dir, args, options)).toString("utf8");
}

/**
 * Several git commands, one after another, each in its own folder, stopping
 * at the first that fails: one process for the host to start (a shell that
 * runs them), where each git would be one more fork of a host process whose
 * every fork stops its loop for ~10 ms. Resolves with what they printed;
 * rejects with GitError naming the first step's arguments and the failing
 * one's stderr. Nothing given is read by the shell: the script names only
 * positional parameters, and every folder and argument is one of them.
 */
export async function gitSteps(
  steps: { dir: string; args: string[] }[],
  options: GitOptions = {},
): Promise<string> {
  const values: string[] = [];
  const param = (value: string) => {
    values.push(value);
    return `"\${${values.length}}"`;
  };
  const script = steps
    .map(({ dir, args }) =>
      ["git", ...GIT_FLAGS]
        .map((word) => `'${word}'`)
        .concat(["-C", param(dir)], args.map(param))
        .join(" "),
    )
    .join(" && ");
  const named = steps[0]?.args ?? [];
  const out = await runGit("sh", ["-c", script, "sh", ...values], named, options);
  return out.toString("utf8");
}

/** A ref's commit, or undefined when the ref does not exist. */
export async function resolveRef(dir: string, ref: string): Promise<string | undefined> {
  try {
    return (await git(dir, ["rev-parse", "--verify", "--quiet", `${ref}^{commit}`])).trim();
  } catch {
    return undefined;
  }
}

export async function isAncestor(dir: string, ancestor: string, of: string): Promise<boolean> {
  try {
    await git(dir, ["merge-base", "--is-ancestor", ancestor, of]);
    return true;
  } catch (error) {
    if (error instanceof GitError && error.code === 1) return false;
    throw error;
  }
}

/** The same, synchronously, for renderers that must answer at once (the approval desk). */
export function gitSync(dir: string, args: string[], maxBytes = 8 * 1024 * 1024): string {
  const result = spawnSync("git", [...GIT_FLAGS, "-C", dir, ...args], {
    env: GIT_ENV,
    maxBuffer: maxBytes,
    timeout: 60_000,
    encoding: "utf8",
  });
  if (result.status !== 0)
    throw new GitError(args, result.status, result.stderr || String(result.error ?? ""));
  return result.stdout;
}
