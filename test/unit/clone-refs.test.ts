import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { REPO_DEFAULTS } from "../../runner/ground/config/connections.ts";
import {
  cloneDir,
  cloneRunRepos,
  originMountpoint,
  runBranch,
} from "../../runner/work/repos/clone.ts";
import { refsFingerprint } from "../../runner/work/repos/clone-refs.ts";

/** The backstop's fast path: a clone whose refs did not move has nothing to back up. */
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd });
function repo(): string {
  const dir = mkdtempSync(join(tmpdir(), "roster-refs-"));
  dirs.push(dir);
  git(dir, "init", "--quiet", "-b", "main");
  writeFileSync(join(dir, "a.txt"), "a\n");
  git(dir, "add", "a.txt");
  git(dir, "commit", "--quiet", "-m", "one");
  return dir;
}

describe("a clone's refs fingerprint", () => {
  it("stays for edits that commit nothing, and moves with a commit or a new branch", async () => {
    const dir = repo();
    const before = await refsFingerprint(dir);
    expect(before).toMatch(/^[0-9a-f]{64}$/);
    writeFileSync(join(dir, "a.txt"), "changed but not committed\n");
    expect(await refsFingerprint(dir)).toBe(before);
    git(dir, "commit", "--quiet", "-am", "two");
    const after = await refsFingerprint(dir);
    expect(after).not.toBe(before);
    git(dir, "branch", "side");
    expect(await refsFingerprint(dir)).not.toBe(after);
  });

  it("can't tell (so the backstop runs) when a box left a symlink where a ref or .git should be", async () => {
    const dir = repo();
    symlinkSync("/etc/hostname", join(dir, ".git/refs/heads/evil"));
    expect(await refsFingerprint(dir)).toBeUndefined();
    const other = mkdtempSync(join(tmpdir(), "roster-refs-"));
    dirs.push(other);
    symlinkSync(join(dir, ".git"), join(other, ".git"));
    expect(await refsFingerprint(other)).toBeUndefined();
  });
});

describe("a run's clone of a gated repo", () => {
  it("is on the run's branch, its origin the box's read-only mount, its author the worker", async () => {
    const canonical = repo();
    const runDir = mkdtempSync(join(tmpdir(), "roster-run-"));
    const home = mkdtempSync(join(tmpdir(), "roster-home-"));
    dirs.push(runDir, home);
    const cloned = await cloneRunRepos(cloneOf(canonical, "main", runDir, home));
    const dest = cloneDir(runDir, "notes");
    const read = (...args: string[]) =>
      execFileSync("git", ["-C", dest, ...args], { encoding: "utf8" }).trim();
    expect(read("branch", "--show-current")).toBe(runBranch("r1"));
    expect(read("config", "remote.origin.url")).toBe(originMountpoint("notes"));
    // its objects are borrowed through the box's paths: what the box's git commits as is its config
    expect(`${read("config", "user.name")} <${read("config", "user.email")}>`).toBe(
      "elf <elf@workers.roster.invalid>",
    );
    expect(cloned.repos[0]).toMatchObject({
      connection: "notes",
      branch: "run/r1",
      target: "main",
      base: read("rev-parse", "HEAD"),
    });
  });

  it("is refused, naming the connection and the branch, when the repo has no such branch", async () => {
    const canonical = repo();
    const runDir = mkdtempSync(join(tmpdir(), "roster-run-"));
    const home = mkdtempSync(join(tmpdir(), "roster-home-"));
    dirs.push(runDir, home);
    await expect(cloneRunRepos(cloneOf(canonical, "trunk", runDir, home))).rejects.toThrow(
      `connection "notes": ${canonical} has no branch "trunk" to start a run from`,
    );
  });
});

/** A run's clone of `canonical` as the connection "notes", from `branch`. */
function cloneOf(canonical: string, branch: string, runDir: string, home: string) {
  return {
    mounts: [
      {
        name: "notes",
        path: canonical,
        readOnly: false,
        kind: "host-repo" as const,
        gated: {
          branch,
          allowExecutables: false,
          maxFileBytes: REPO_DEFAULTS.maxFileBytes,
          maxPushBytes: REPO_DEFAULTS.maxPushBytes,
          maxDeletionsUngated: REPO_DEFAULTS.maxDeletionsUngated,
          writeFrom: "clean" as const,
          scanParticipants: true,
        },
      },
    ],
    runDir,
    runId: "r1",
    home,
    worker: "elf",
  };
}
