import type { RepoPolicy } from "../../ground/config/connections.ts";
import { git } from "../../ground/git/git.ts";

/**
 * What a push may carry onto the landing branch, checked for every commit in
 * `base..head` (a file added and removed again still lands in history):
 * regular files only (no symlinks, no submodules), no executables unless the
 * repo allows them, safe paths (no `..`, no `.git` component, no control
 * characters), and sizes within the repo's limits. Counts come from the net
 * change, which is what the landing branch will show.
 */
export interface RawChange {
  oldMode: string;
  newMode: string;
  newSha: string;
  status: string;
  path: string;
}

export interface RangeFacts {
  /** Net change base → head. */
  net: RawChange[];
  /** Each commit's own change against its parents. */
  perCommit: RawChange[];
  deletions: number;
  /** Every blob any commit in the range adds or changes (deduplicated by path and content). */
  blobs: Array<{ path: string; sha: string; size: number }>;
  totalBytes: number;
  commits: number;
}

const ZERO = /^0+$/;

/** Parses `git diff-tree -z --raw` output: ":old new oldsha newsha status\0path\0". */
export function parseRaw(output: string): RawChange[] {
  const parts = output.split("\0");
  const changes: RawChange[] = [];
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const meta = parts[i];
    const path = parts[i + 1];
    if (!meta || path === undefined) continue;
    const [oldMode, newMode, , newSha, status] = meta.replace(/^\n?:/, "").split(" ");
    if (!oldMode || !newMode || !newSha || !status) continue;
    changes.push({ oldMode, newMode, newSha, status: status.charAt(0), path });
  }
  return changes;
}

/** Why a path may not land, or undefined. */
export function pathProblem(path: string): string | undefined {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(path)) return "has a control character in its name";
  const parts = path.split("/");
  if (path.startsWith("/") || parts.some((part) => part === "" || part === "." || part === ".."))
    return "is not a plain relative path (empty, '.' or '..' part)";
  if (parts.some((part) => /^\.git[. ]*$/i.test(part) || /^git~\d+$/i.test(part)))
    return "is inside .git";
  return undefined;
}

function modeProblem(mode: string, policy: RepoPolicy): string | undefined {
  if (mode === "100644") return undefined;
  if (mode === "100755")
    return policy.allowExecutables
      ? undefined
      : "is executable (this repo does not take executables: allow_executables)";
  if (mode === "120000") return "is a symlink";
  if (mode === "160000") return "is a submodule";
  return `has file mode ${mode}`;
}

export async function rangeFacts(dir: string, base: string, head: string): Promise<RangeFacts> {
  const net = parseRaw(
    await git(dir, ["diff-tree", "-r", "-z", "--raw", "--no-renames", base, head]),
  );
  const commits = (await git(dir, ["rev-list", `${base}..${head}`])).split("\n").filter(Boolean);
  const perCommit = commits.length
    ? parseRaw(
        await git(
          dir,
          [
            "diff-tree",
            "--stdin",
            "-r",
            "-z",
            "--raw",
            "--no-renames",
            "--no-commit-id",
            "-m",
            "--root",
          ],
          { input: `${commits.join("\n")}\n` },
        ),
      )
    : [];
  const seen = new Set<string>();
  const wanted: Array<{ path: string; sha: string }> = [];
  for (const change of [...net, ...perCommit]) {
    if (change.status === "D" || ZERO.test(change.newSha)) continue;
    const key = `${change.path}\0${change.newSha}`;
    if (seen.has(key)) continue;
    seen.add(key);
    wanted.push({ path: change.path, sha: change.newSha });
  }
  const sizes = await objectSizes(dir, [...new Set(wanted.map((blob) => blob.sha))]);
  const blobs = wanted.map((blob) => ({ ...blob, size: sizes.get(blob.sha) ?? 0 }));
  return {
    net,
    perCommit,
    deletions: net.filter((change) => change.status === "D").length,
    blobs,
    totalBytes: [...sizes.values()].reduce((sum, size) => sum + size, 0),
    commits: commits.length,
  };
}

async function objectSizes(dir: string, shas: string[]): Promise<Map<string, number>> {
  const sizes = new Map<string, number>();
  if (!shas.length) return sizes;
  const out = await git(dir, ["cat-file", "--batch-check=%(objectname) %(objectsize)"], {
    input: `${shas.join("\n")}\n`,
  });
  for (const line of out.split("\n")) {
    const [sha, size] = line.split(" ");
    if (sha && size && /^\d+$/.test(size)) sizes.set(sha, Number(size));
  }
  return sizes;
}

/** Every rule the range breaks, worst first, as "path: reason" lines. */
export async function rangeProblems(
  dir: string,
  base: string,
  head: string,
  policy: RepoPolicy,
): Promise<{ facts: RangeFacts; problems: string[] }> {
  const facts = await rangeFacts(dir, base, head);
  const problems: string[] = [];
  const changes = [...facts.net, ...facts.perCommit];
  const told = new Set<string>();
  const tell = (line: string) => {
    if (!told.has(line)) problems.push(line);
    told.add(line);
  };
  for (const change of changes) {
    const where = pathProblem(change.path);
    if (where) tell(`${JSON.stringify(change.path)} ${where}`);
    if (change.status === "D" || ZERO.test(change.newSha)) continue;
    const mode = modeProblem(change.newMode, policy);
    if (mode) tell(`${JSON.stringify(change.path)} ${mode}`);
  }
  for (const blob of facts.blobs) {
    if (blob.size > policy.maxFileBytes)
      tell(
        `${JSON.stringify(blob.path)} is ${blob.size} bytes, over the per-file limit of ${policy.maxFileBytes}`,
      );
  }
  if (facts.totalBytes > policy.maxPushBytes)
    tell(`the push adds ${facts.totalBytes} bytes, over the limit of ${policy.maxPushBytes}`);
  return { facts, problems };
}

/** The bytes every file of `head`'s tree holds: what the repo would hold once it lands. */
export async function treeBytes(dir: string, head: string): Promise<number> {
  const out = await git(dir, ["ls-tree", "-r", "-l", "-z", head]);
  let total = 0;
  for (const entry of out.split("\0")) {
    // "<mode> blob <sha> <size>\t<path>": a submodule's size is "-"
    const size = entry.split("\t")[0]?.trim().split(/\s+/)[3];
    if (size && /^\d+$/.test(size)) total += Number(size);
  }
  return total;
}
