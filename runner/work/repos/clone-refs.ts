import { createHash } from "node:crypto";
import { constants, type Stats } from "node:fs";
import { lstat, open, readdir } from "node:fs/promises";
import { join } from "node:path";

/**
 * What a clone's refs say, as one fingerprint: `.git/HEAD`, `.git/packed-refs`
 * and every file under `.git/refs/heads`. Taken when the clone is made and
 * again after its box is gone; the same fingerprint means neither HEAD nor
 * any branch moved, so nothing was committed that the backstop could find
 * (it asks for exactly HEAD and the branches), and its container is spared.
 *
 * The clone is the box's: read as inert bytes, by lstat and O_NOFOLLOW, every
 * folder on the way a real folder; a symlink, an odd file or anything over a
 * bound anywhere answers "can't tell" (undefined), and the backstop runs as
 * before. Read only after the box is gone, so nothing changes under it.
 */
const MAX_REF_BYTES = 4 * 1024 * 1024;
const MAX_REFS = 10_000;

class CantTell extends Error {}

export async function refsFingerprint(clone: string): Promise<string | undefined> {
  const hash = createHash("sha256");
  let files = 0;
  const realDir = async (path: string): Promise<boolean> => {
    const stats = await lstat(path).catch(() => undefined);
    if (!stats) return false;
    if (!stats.isDirectory()) throw new CantTell();
    return true;
  };
  const take = async (path: string, name: string, stats?: Stats) => {
    const seen = stats ?? (await lstat(path).catch(() => undefined));
    if (!seen) return;
    if (!seen.isFile() || seen.size > MAX_REF_BYTES || ++files > MAX_REFS) throw new CantTell();
    const file = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    try {
      hash.update(`${name}\0`);
      hash.update(await file.readFile());
      hash.update("\0");
    } finally {
      await file.close();
    }
  };
  const walk = async (dir: string, name: string): Promise<void> => {
    if (!(await realDir(dir))) return;
    const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) =>
      a.name.localeCompare(b.name),
    );
    for (const entry of entries) {
      const path = join(dir, entry.name);
      const stats = await lstat(path);
      if (stats.isDirectory()) await walk(path, `${name}/${entry.name}`);
      else await take(path, `${name}/${entry.name}`, stats);
    }
  };
  try {
    const git = join(clone, ".git");
    if (!(await realDir(git))) return undefined;
    await take(join(git, "HEAD"), "HEAD");
    await take(join(git, "packed-refs"), "packed-refs");
    if (await realDir(join(git, "refs"))) await walk(join(git, "refs", "heads"), "refs/heads");
    return hash.digest("hex");
  } catch {
    return undefined;
  }
}
