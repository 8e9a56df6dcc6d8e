import { existsSync } from "node:fs";
import { chown, mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { boxUser } from "../../boundary/box/layout.ts";
import { storeDir, workerDir } from "../../boundary/store/snapshots.ts";
import { knowledgePath } from "../../ground/config/knowledge.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { refuseUnlessValid, tryConfigChange } from "../../ground/config/trial.ts";
import { workerNameProblem } from "../../ground/config/worker-name.ts";
import { RosterError } from "../../ground/errors.ts";
import { replaceFile } from "../../ground/files/atomic-replace.ts";
import { ensureKnowledgeRepo } from "../../records/workers/knowledge-repo.ts";

/**
 * `roster worker add <name>`: a new worker as `roster init` makes elf —
 * workers/<name>/worker.toml and identity.md in the config, its store and its
 * knowledge repo in the data. The name is checked by the loader's rule, a
 * name already in use (in the config or in the data) is refused, and the
 * config with the new worker is loaded on a copy before anything is written
 * (config/trial.ts). A failure half-way takes back what this call made.
 */
export function identityFor(name: string): string {
  return `You are ${name}, a careful general-purpose worker.

Do the task you are given with the tools you have. Work in ~/workspace; keep
anything worth remembering between runs in ~/store. When you are done, answer
in plain text: say what you did, what you found, and what you could not do.
`;
}

export const workerToml = (name: string) => `name = "${name}"\n`;

export interface AddedWorker {
  name: string;
  /** Every file and folder made, in the order made. */
  created: string[];
}

function refuse(message: string, hint?: string): RosterError {
  return new RosterError(message, { exitCode: 2, ...(hint ? { hint } : {}) });
}

/** Why `name` can't be added (a bad name, or one in use), or undefined. */
export function addProblem(paths: RosterPaths, name: string): string | undefined {
  const bad = workerNameProblem(name);
  if (bad) return bad;
  const config = join(paths.config, "workers", name);
  if (existsSync(config)) return `a worker named "${name}" already exists (${config})`;
  const data = workerDir(paths, name);
  if (existsSync(data))
    return `"${name}" is taken: ${data} holds data of a worker by that name; move it away or pick another name`;
  return undefined;
}

export async function addWorker(paths: RosterPaths, name: string): Promise<AddedWorker> {
  const problem = addProblem(paths, name);
  if (problem) throw refuse(problem);
  if (!existsSync(join(paths.config, "org.toml")))
    throw refuse(`no config at ${paths.config}`, "roster init makes one");
  const write = async (root: string) => {
    const dir = join(root, "workers", name);
    // not recursive: a folder made since the check above means the name was taken meanwhile
    await mkdir(dir);
    await writeFile(join(dir, "identity.md"), identityFor(name));
    await writeFile(join(dir, "worker.toml"), workerToml(name));
  };
  refuseUnlessValid(
    await tryConfigChange(paths.config, write, { vaultDir: paths.vault }),
    `adding "${name}"`,
  );

  const created: string[] = [];
  const configDir = join(paths.config, "workers", name);
  const dataDir = workerDir(paths, name);
  try {
    await mkdir(configDir).catch((error: NodeJS.ErrnoException) => {
      if (error.code === "EEXIST")
        throw refuse(`a worker named "${name}" already exists (${configDir})`);
      throw error;
    });
    created.push(configDir);
    // identity first: the gateway sees the worker when worker.toml appears, whole
    await replaceFile(join(configDir, "identity.md"), identityFor(name), { mode: 0o644 });
    created.push(join(configDir, "identity.md"));
    await replaceFile(join(configDir, "worker.toml"), workerToml(name), { mode: 0o644 });
    created.push(join(configDir, "worker.toml"));
    const store = storeDir(paths, { worker: name });
    created.push(dataDir);
    await mkdir(join(store, ".locks"), { recursive: true });
    // the box writes its store as the image's user (as a run's home is prepared)
    if (process.getuid?.() === 0) {
      const user = boxUser();
      await chown(store, user.uid, user.gid);
      await chown(join(store, ".locks"), user.uid, user.gid);
    }
    created.push(store);
    await ensureKnowledgeRepo(paths, name);
    created.push(knowledgePath(paths.data, name));
    return { name, created };
  } catch (error) {
    // only what this call made: the name was free in both places when it began
    if (created.includes(dataDir)) await rm(dataDir, { recursive: true, force: true });
    if (created.includes(configDir)) await rm(configDir, { recursive: true, force: true });
    throw error;
  }
}
