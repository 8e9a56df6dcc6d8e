import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import type { BoxEngine } from "../../boundary/box/engine.ts";
import type { ConnectionMount } from "../../ground/config/connections.ts";
import { resolveRef } from "../../ground/git/git.ts";
import { gatedRepos, type RunRepo } from "../repos/clone.ts";

/**
 * What a ready box was made from, as one string: every file of the
 * deployment's config (org.toml, workers, connections: grants, limits,
 * toolchains and mounts all live there) and the id of the image it runs. A
 * ready box whose key differs from the one computed at hand-off is discarded,
 * never handed out; a config edit therefore discards the whole pool.
 */
export async function readyKey(
  configRoot: string,
  engine: BoxEngine,
  image: string,
): Promise<string> {
  // the engine is asked while the files are read: a ready box's hand-off waits on both
  const asked = engine.image(image);
  asked.catch(() => undefined);
  const hash = createHash("sha256");
  for (const file of await filesUnder(configRoot)) {
    hash.update(`${relative(configRoot, file)}\0`);
    hash.update(await readFile(file));
    hash.update("\0");
  }
  const id = (await asked)?.id ?? "missing";
  return `${hash.digest("hex").slice(0, 16)}:${id}`;
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  const out: string[] = [];
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(path)));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

/**
 * A gated repo whose landing branch moved since the ready box cloned it (a
 * run pushed meanwhile), or undefined: the run would start from an old base,
 * so the box is discarded instead.
 */
export async function movedRepo(
  mounts: ConnectionMount[],
  cloned: RunRepo[],
): Promise<string | undefined> {
  const repos = gatedRepos(mounts);
  // one git process per repo, all at once
  const heads = await Promise.all(
    repos.map((repo) => resolveRef(repo.canonical, `refs/heads/${repo.policy.branch}`)),
  );
  return repos.find((repo, at) => {
    const head = heads[at];
    const base = cloned.find((one) => one.connection === repo.connection)?.base;
    return !head || head !== base;
  })?.connection;
}
