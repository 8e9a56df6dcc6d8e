/**
 * Refs read and written as git's own files (runner/ground/git/refs-on-disk.ts),
 * checked against real git: a branch's tip read from a loose ref or from
 * packed-refs, in a bare repo or a working one, is what `git rev-parse` says;
 * anything not plain (a symbolic branch, a missing one, a reftable repo) is
 * left to git. A branch started in a clone is one git itself then works on.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readBranchTip, startBranchAt } from "../../runner/ground/git/refs-on-disk.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], {
    cwd,
    encoding: "utf8",
  }).trim();

/** A working repo with two commits on main and a branch `side` at the first. */
function working(): string {
  const dir = mkdtempSync(join(tmpdir(), "roster-refs-disk-"));
  dirs.push(dir);
  git(dir, "init", "--quiet", "-b", "main");
  for (const text of ["one", "two"]) {
    writeFileSync(join(dir, "a.txt"), `${text}\n`);
    git(dir, "add", "a.txt");
    git(dir, "commit", "--quiet", "-m", text);
    if (text === "one") git(dir, "branch", "side");
  }
  return dir;
}

describe("refs read from git's files", () => {
  it("reads a loose ref and a packed one as git does, in a working repo and a bare one", async () => {
    const repo = working();
    expect(await readBranchTip(repo, "main")).toBe(git(repo, "rev-parse", "refs/heads/main"));
    const bare = join(mkdtempSync(join(tmpdir(), "roster-refs-bare-")), "repo.git");
    dirs.push(join(bare, ".."));
    git(repo, "clone", "--quiet", "--bare", repo, bare);
    // a fresh bare clone keeps its branches in packed-refs
    expect(await readBranchTip(bare, "side")).toBe(git(bare, "rev-parse", "refs/heads/side"));
    git(repo, "pack-refs", "--all");
    expect(await readBranchTip(repo, "side")).toBe(git(repo, "rev-parse", "refs/heads/side"));
  });

  it("leaves git to answer for a missing branch, a symbolic one and a folder that is no repo", async () => {
    const repo = working();
    expect(await readBranchTip(repo, "nowhere")).toBeUndefined();
    git(repo, "symbolic-ref", "refs/heads/alias", "refs/heads/main");
    expect(await readBranchTip(repo, "alias")).toBeUndefined();
    expect(await readBranchTip(tmpdir(), "main")).toBeUndefined();
  });

  it("leaves a reftable repository to git", async () => {
    // what marks one (git 2.45 and later): a reftable folder in its git folder
    const repo = working();
    mkdirSync(join(repo, ".git", "reftable"));
    expect(await readBranchTip(repo, "main")).toBeUndefined();
    expect(await startBranchAt(repo, "run/r1", git(repo, "rev-parse", "HEAD"))).toBe(false);
    expect(git(repo, "branch", "--show-current")).toBe("main");
  });
});

describe("a branch started in a clone from its files", () => {
  it("is checked out at the commit, and git works on it as on its own", async () => {
    const repo = working();
    const head = git(repo, "rev-parse", "HEAD");
    expect(await startBranchAt(repo, "run/r1", head)).toBe(true);
    expect(git(repo, "branch", "--show-current")).toBe("run/r1");
    expect(git(repo, "rev-parse", "HEAD")).toBe(head);
    expect(git(repo, "status", "--porcelain")).toBe("");
    writeFileSync(join(repo, "a.txt"), "three\n");
    git(repo, "commit", "--quiet", "-am", "three");
    expect(git(repo, "rev-parse", "run/r1^")).toBe(head);
    expect(git(repo, "rev-parse", "main")).toBe(head);
    // a branch that is there already is not moved
    expect(await startBranchAt(repo, "side", head)).toBe(false);
    expect(git(repo, "rev-parse", "side")).not.toBe(head);
  });
});
