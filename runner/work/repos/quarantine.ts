import { randomUUID } from "node:crypto";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { GitError, git } from "../../ground/git/git.ts";

/**
 * A bundle from a box is opened only in a quarantine repo: a fresh bare repo
 * that borrows the canonical repo's objects (so the bundle's prerequisites are
 * found) and receives the bundle's with every object checked as it arrives
 * (fsck). Nothing reaches the canonical repo until the caller has looked at
 * what came in and fetches it over itself.
 */
export interface Quarantine {
  dir: string;
  /** The bundle's refs as it names them: ref name → commit. */
  heads: Map<string, string>;
  remove(): Promise<void>;
}

export class BundleRefused extends Error {}

/** `ref` in the quarantine repo for each head the bundle carries. */
export const quarantineRef = (index: number) => `refs/q/${index}`;

export async function openBundle(options: {
  canonical: string;
  bundle: string;
  /** Where quarantine repos are made (host-owned). */
  scratch: string;
}): Promise<Quarantine> {
  const dir = join(options.scratch, `q-${randomUUID()}`);
  await mkdir(options.scratch, { recursive: true });
  const remove = () => rm(dir, { recursive: true, force: true });
  try {
    await git(options.scratch, ["init", "--quiet", "--bare", dir]);
    await writeFile(
      join(dir, "objects/info/alternates"),
      `${resolve(options.canonical, "objects")}\n`,
    );
    try {
      await git(dir, ["bundle", "verify", "--quiet", options.bundle]);
    } catch (error) {
      throw new BundleRefused(
        `the bundle does not verify: ${error instanceof GitError ? lastLine(error.stderr) : String(error)}`,
      );
    }
    const heads = new Map<string, string>();
    for (const line of (await git(dir, ["bundle", "list-heads", options.bundle])).split("\n")) {
      const match = /^([0-9a-f]{40}) (\S+)$/.exec(line.trim());
      if (match?.[1] && match[2]) heads.set(match[2], match[1]);
      else if (line.trim()) throw new BundleRefused(`the bundle names a head it can't: ${line}`);
    }
    if (!heads.size) throw new BundleRefused("the bundle carries no branch");
    const refspecs = [...heads.keys()].map((name, index) => `${name}:${quarantineRef(index)}`);
    try {
      await git(dir, [
        "-c",
        "transfer.fsckObjects=true",
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        options.bundle,
        ...refspecs,
      ]);
    } catch (error) {
      throw new BundleRefused(
        `the bundle's objects fail git's checks: ${error instanceof GitError ? lastLine(error.stderr) : String(error)}`,
      );
    }
    return { dir, heads, remove };
  } catch (error) {
    await remove();
    throw error;
  }
}

/**
 * Keeps one of the quarantine's checked heads in the canonical repo at `ref`
 * (objects and all): the only way anything from a box reaches it. Replaces
 * the ref if it is there already.
 */
export async function keepInCanonical(
  canonical: string,
  quarantine: Quarantine,
  index: number,
  ref: string,
): Promise<void> {
  await git(canonical, [
    "fetch",
    "--quiet",
    "--no-tags",
    "--no-write-fetch-head",
    quarantine.dir,
    `+${quarantineRef(index)}:${ref}`,
  ]);
}

function lastLine(text: string): string {
  const lines = text
    .trim()
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean);
  return (
    lines
      .filter((line) => /error|fatal/i.test(line))
      .slice(0, 2)
      .join("; ") ||
    lines.at(-1) ||
    ""
  );
}
