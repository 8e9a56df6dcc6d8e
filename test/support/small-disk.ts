/**
 * A small filesystem a box can fill, for the tests of `[store] reserve`: the
 * reserve set in a deployment's org.toml, and a tmpfs mounted (root only)
 * where the test wants the host's disk to be short.
 */
import { execFileSync } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { RosterPaths } from "../../runner/ground/config/paths.ts";

/** `[store] reserve = fraction`, into the [store] table the example config may already have. */
export async function setStoreReserve(paths: RosterPaths, fraction: number): Promise<void> {
  const org = join(paths.config, "org.toml");
  const text = await readFile(org, "utf8");
  await writeFile(
    org,
    /^\[store\]$/m.test(text)
      ? text.replace(/^\[store\]$/m, `[store]\nreserve = ${fraction}`)
      : `${text}\n[store]\nreserve = ${fraction}\n`,
  );
}

/** Mounts a tmpfs of `size` (e.g. "160m") at `dir`; the returned function unmounts it. */
export async function mountSmallDisk(dir: string, size: string): Promise<() => void> {
  await mkdir(dir, { recursive: true });
  execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir]);
  return () => execFileSync("umount", ["-l", dir]);
}
