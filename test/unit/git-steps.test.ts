/**
 * Several host git commands in one process (runner/ground/git/git.ts
 * gitSteps), with real git: each step runs in its own folder with its own
 * arguments, whatever those hold (spaces, quotes, `$(...)`, a leading dash
 * is git's to refuse); the output is what the steps printed; the first step
 * that fails stops the rest and its stderr is the error's.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { GitError, gitSteps } from "../../runner/ground/git/git.ts";

const root = mkdtempSync(join(tmpdir(), "git-steps-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("git steps in one process", () => {
  it("runs each step in its folder with its arguments as given, and returns what they printed", async () => {
    // a folder name a shell would expand, split or end a quote on, were it ever read as script
    const odd = join(root, `it's a "repo"; $(echo expanded) \`id\` $HOME *`);
    mkdirSync(odd);
    execFileSync("git", ["init", "-q", "-b", "main", odd]);
    const out = await gitSteps([
      { dir: odd, args: ["config", "user.name", "a name; with $HOME"] },
      { dir: odd, args: ["config", "user.name"] },
      { dir: odd, args: ["rev-parse", "--show-toplevel"] },
    ]);
    expect(out.split("\n")).toEqual(["a name; with $HOME", odd, ""]);
  });

  it("stops at the first step that fails, with its stderr", async () => {
    const repo = join(root, "plain");
    execFileSync("git", ["init", "-q", "-b", "main", repo]);
    const marker = join(repo, "after");
    writeFileSync(join(repo, "keep"), "");
    const failing = gitSteps([
      { dir: repo, args: ["rev-parse", "--verify", "refs/heads/nowhere^{commit}"] },
      { dir: repo, args: ["config", "roster.after", marker] },
    ]);
    await expect(failing).rejects.toBeInstanceOf(GitError);
    await expect(failing).rejects.toThrow(
      /git rev-parse --verify refs\/heads\/nowhere.* failed: fatal/,
    );
    expect(() => execFileSync("git", ["-C", repo, "config", "roster.after"])).toThrow();
  });
});
