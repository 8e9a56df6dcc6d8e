/**
 * A second worker in a deployment, made the way `roster init` makes elf
 * (worker.toml and identity.md). One function, so the tests that need a
 * second worker switch to `roster worker add` in one place once it exists.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { RosterPaths } from "../../runner/config/paths.ts";

export async function addWorker(paths: RosterPaths, name: string): Promise<void> {
  const dir = join(paths.config, "workers", name);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, "worker.toml"), `name = "${name}"\n`);
  await writeFile(
    join(dir, "identity.md"),
    `You are ${name}, a careful general-purpose worker. Do the task you are given; answer in plain text.\n`,
  );
}
