import { existsSync } from "node:fs";
import { copyFile, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { knowledgePath } from "../../ground/config/knowledge.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { PROJECT_ROOT } from "../../ground/version.ts";
import { ensureKnowledgeRepo } from "../../records/workers/knowledge-repo.ts";

/**
 * `roster init`: the config, data and state roots from org.example.toml, with
 * one worker, elf, and its knowledge repo. Idempotent: it never overwrites a
 * file that exists.
 */
export const ELF_IDENTITY = `You are elf, a careful general-purpose worker.

Do the task you are given with the tools you have. Work in ~/workspace; keep
anything worth remembering between runs in ~/store. When you are done, answer
in plain text: say what you did, what you found, and what you could not do.
`;

export async function initRoots(paths: RosterPaths): Promise<string[]> {
  const created: string[] = [];
  for (const dir of [
    paths.config,
    paths.data,
    paths.state,
    join(paths.config, "workers/elf"),
    join(paths.config, "connections"),
  ]) {
    if (!existsSync(dir)) {
      await mkdir(dir, { recursive: true });
      created.push(dir);
    }
  }
  for (const dir of [paths.vault, paths.ca, paths.identity]) {
    if (!existsSync(dir)) {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      created.push(dir);
    }
  }
  const files: Array<[string, () => Promise<void>]> = [
    [
      join(paths.config, "org.toml"),
      () => copyFile(join(PROJECT_ROOT, "org.example.toml"), join(paths.config, "org.toml")),
    ],
    [
      join(paths.config, "workers/elf/worker.toml"),
      () => writeFile(join(paths.config, "workers/elf/worker.toml"), 'name = "elf"\n'),
    ],
    [
      join(paths.config, "workers/elf/identity.md"),
      () => writeFile(join(paths.config, "workers/elf/identity.md"), ELF_IDENTITY),
    ],
  ];
  for (const [file, make] of files) {
    if (!existsSync(file)) {
      await make();
      created.push(file);
    }
  }
  // elf's own knowledge repo (a worker added later gets one at its first run)
  if (await ensureKnowledgeRepo(paths, "elf")) created.push(knowledgePath(paths.data, "elf"));
  return created;
}
