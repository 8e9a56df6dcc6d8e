import { mkdir, readFile, rename, stat, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";

/**
 * Two ref operations done by reading and writing git's own files
 * (gitrepository-layout(5): loose refs, packed-refs, HEAD as a symbolic ref)
 * instead of starting git, for the one place a git process is on the path
 * every run's start waits on (taking a spare clone: repos/spare-clones.ts).
 * A git process there is a fork of the whole server. Each answers undefined
 * or false the moment anything is not the plain files layout these read (a
 * reftable repository, a symbolic branch, a ref that isn't a full object
 * id): the caller then asks git, as before.
 */

const OBJECT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/** The repository's git folder: its .git, or the repo itself when bare. */
async function gitDir(repo: string): Promise<string | undefined> {
  if (await isDir(join(repo, ".git", "objects"))) return join(repo, ".git");
  const bare = await Promise.all(["objects", "refs"].map((name) => isDir(join(repo, name))));
  return bare.every(Boolean) && (await exists(join(repo, "HEAD"))) ? repo : undefined;
}

async function isDir(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined))?.isDirectory() === true;
}

async function exists(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined)) !== undefined;
}

/**
 * The commit `refs/heads/<branch>` names in `repo`, read from its loose ref or
 * packed-refs; undefined when it can't be read plainly (or isn't there).
 */
export async function readBranchTip(repo: string, branch: string): Promise<string | undefined> {
  const dir = await gitDir(repo);
  if (!dir || (await exists(join(dir, "reftable")))) return undefined;
  const ref = `refs/heads/${branch}`;
  const loose = await readFile(join(dir, ref), "utf8").catch((error: NodeJS.ErrnoException) =>
    error.code === "ENOENT" ? undefined : null,
  );
  if (loose === null) return undefined;
  if (loose !== undefined) {
    const id = loose.trim();
    return OBJECT_ID.test(id) ? id : undefined;
  }
  const packed = await readFile(join(dir, "packed-refs"), "utf8").catch(() => undefined);
  for (const line of packed?.split("\n") ?? []) {
    const space = line.indexOf(" ");
    if (line.slice(space + 1) !== ref) continue;
    const id = line.slice(0, space);
    return OBJECT_ID.test(id) ? id : undefined;
  }
  return undefined;
}

/**
 * In a clone whose HEAD is at `commit`, makes `branch` there and checks it
 * out, as `git checkout -b <branch>` does (its reflog aside): the working tree
 * and index are already that commit's. False, with nothing changed, when the
 * clone isn't plain files or the branch exists already.
 */
export async function startBranchAt(
  clone: string,
  branch: string,
  commit: string,
): Promise<boolean> {
  const dir = await gitDir(clone);
  if (!dir || dir === clone || !OBJECT_ID.test(commit)) return false;
  if (await exists(join(dir, "reftable"))) return false;
  const ref = `refs/heads/${branch}`;
  const path = join(dir, ref);
  if (await exists(path)) return false;
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, `${commit}\n`, { flag: "wx" });
  // HEAD is replaced whole, never seen half-written
  const head = join(dir, "HEAD.roster-new");
  await writeFile(head, `ref: ${ref}\n`);
  await rename(head, join(dir, "HEAD"));
  return true;
}
