/**
 * A server's clones made before their runs (runner/work/repos/spare-clones.ts),
 * with real git: a run that takes one gets what cloning at its start would
 * have given it (its branch, origin, author, the branch's current commit as
 * its base); a spare the canonical branch has moved past since is never
 * taken, and the run clones from the branch as it is now; one spare is taken
 * once; nothing is left behind once the server stops.
 */
import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { REPO_DEFAULTS } from "../../runner/ground/config/connections.ts";
import {
  type CloneKey,
  cloneDir,
  cloneRunRepos,
  originMountpoint,
} from "../../runner/work/repos/clone.ts";
import { SpareClones } from "../../runner/work/repos/spare-clones.ts";

const dirs: string[] = [];
const closing: SpareClones[] = [];
afterEach(async () => {
  for (const spares of closing.splice(0)) await spares.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const temp = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
};
const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], {
    cwd,
    encoding: "utf8",
  }).trim();

/** A canonical repo with one commit on main, and a way to land another. */
function canonical(): { dir: string; land: (text: string) => string } {
  const dir = temp("roster-spare-canonical-");
  git(dir, "init", "--quiet", "-b", "main");
  const land = (text: string) => {
    writeFileSync(join(dir, "notes.md"), text);
    git(dir, "add", "notes.md");
    git(dir, "commit", "--quiet", "-m", text);
    return git(dir, "rev-parse", "HEAD");
  };
  land("one\n");
  return { dir, land };
}

/** Spares kept under a fresh folder, made as soon as they are wanted. */
async function spareClones(): Promise<{ spares: SpareClones; folder: string }> {
  const folder = join(temp("roster-spares-"), "spare-clones");
  const spares = await new SpareClones(folder, 0).open();
  closing.push(spares);
  return { spares, folder };
}

/** Waits until `count` spares are ready and the folder holds just those. */
async function spareCount(spares: SpareClones, folder: string, count: number): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    const held = existsSync(folder) ? readdirSync(folder).length : 0;
    if (spares.count === count && held === count) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`${folder} never held just ${count} spare(s) ready`);
}

/** A canonical repo and one spare of it, ready. */
async function oneSpare() {
  const repo = canonical();
  const { spares, folder } = await spareClones();
  const key: CloneKey = { worker: "elf", connection: "notes", canonical: repo.dir, branch: "main" };
  spares.want(key);
  await spareCount(spares, folder, 1);
  return { repo, spares, folder, key };
}

/** A run's clones of `repo` as the connection "notes", from main. */
function runClones(repo: string, runId: string, spares: SpareClones) {
  const runDir = temp("roster-run-");
  const home = join(runDir, "home");
  mkdirSync(home);
  const clone = cloneRunRepos({
    mounts: [
      {
        name: "notes",
        path: repo,
        readOnly: false,
        kind: "host-repo" as const,
        gated: { ...REPO_DEFAULTS, branch: "main", allowExecutables: false },
      },
    ],
    runDir,
    runId,
    home,
    worker: "elf",
    spares,
  });
  return { clone, dest: cloneDir(runDir, "notes") };
}

const read = (dest: string, ...args: string[]) =>
  execFileSync("git", ["-C", dest, ...args], { encoding: "utf8" }).trim();

describe("spare clones", () => {
  it("give the next run the clone its start would have made, on its own branch", async () => {
    const repo = canonical();
    const { spares, folder } = await spareClones();
    const first = runClones(repo.dir, "r1", spares);
    await first.clone;
    // the first run cloned for itself and asked for a spare for the next
    await spareCount(spares, folder, 1);
    const second = runClones(repo.dir, "r2", spares);
    const cloned = await second.clone;
    await spareCount(spares, folder, 1); // taken, and the one after it made
    expect(read(second.dest, "branch", "--show-current")).toBe("run/r2");
    expect(read(second.dest, "config", "remote.origin.url")).toBe(originMountpoint("notes"));
    expect(`${read(second.dest, "config", "user.name")}`).toBe("elf");
    expect(cloned.repos[0]?.base).toBe(git(repo.dir, "rev-parse", "main"));
    expect(readFileSync(join(second.dest, "notes.md"), "utf8")).toBe("one\n");
  });

  it("are never taken once the branch has moved: the run starts from the branch as it is", async () => {
    const repo = canonical();
    const { spares, folder } = await spareClones();
    await runClones(repo.dir, "r1", spares).clone;
    await spareCount(spares, folder, 1);
    const landed = repo.land("two\n");
    const next = runClones(repo.dir, "r2", spares);
    const cloned = await next.clone;
    expect(cloned.repos[0]?.base).toBe(landed);
    expect(read(next.dest, "rev-parse", "HEAD")).toBe(landed);
    expect(read(next.dest, "branch", "--show-current")).toBe("run/r2");
  });

  it("are taken once, and only for their own worker, repo and branch", async () => {
    const { repo, spares, folder, key } = await oneSpare();
    const elsewhere = temp("roster-run-");
    // another branch of the same connection: not this spare (dropped, not handed over)
    expect(
      await spares.take({ ...key, branch: "trunk" }, join(elsewhere, "a"), "run/a"),
    ).toBeUndefined();
    await spareCount(spares, folder, 0);
    spares.want(key);
    await spareCount(spares, folder, 1);
    const [taken, again] = await Promise.all([
      spares.take(key, join(elsewhere, "b"), "run/b"),
      spares.take(key, join(elsewhere, "c"), "run/c"),
    ]);
    expect(taken).toBe(git(repo.dir, "rev-parse", "main"));
    expect(again).toBeUndefined();
    expect(readdirSync(elsewhere)).toEqual(["b"]);
  });

  it("that can't be made (no such branch) leave nothing behind, and no run is given one", async () => {
    const repo = canonical();
    const { spares, folder } = await spareClones();
    const key: CloneKey = {
      worker: "elf",
      connection: "notes",
      canonical: repo.dir,
      branch: "trunk",
    };
    spares.want(key);
    expect(spares.making).toBe(true);
    for (let i = 0; i < 1000 && spares.making; i++)
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect(spares.making).toBe(false);
    expect(readdirSync(folder)).toEqual([]);
    expect(spares.count).toBe(0);
    const run = temp("roster-run-");
    expect(await spares.take(key, join(run, "a"), "run/a")).toBeUndefined();
    expect(existsSync(join(run, "a"))).toBe(false);
  });

  it("leave nothing behind when the server stops, and none is made after", async () => {
    const { spares, folder, key } = await oneSpare();
    await spares.close();
    expect(existsSync(folder)).toBe(false);
    spares.want(key);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(existsSync(folder)).toBe(false);
  });
});
