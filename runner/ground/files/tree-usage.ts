import type { BigIntStats } from "node:fs";
import { lstat, opendir } from "node:fs/promises";
import { join } from "node:path";

/**
 * Bytes on disk under each folder, counted in this process the way
 * `du -s -B1 -x -P` counts them: blocks on disk (st_blocks × 512, so a sparse
 * file counts what it holds), the folders themselves included, symlinks never
 * followed, nothing on another filesystem, and an inode with more than one
 * link (every folder, a hard-linked file) counted once across all the folders
 * given: one seen before counts nothing, and a folder given after another
 * that holds it counts 0. A folder that isn't there counts 0.
 *
 * Bounded, and never less than the truth: past `upTo` entries in all it
 * stops reading (a folder is read a few entries at a time, never whole) and
 * resolves undefined, and so it does on any error but an entry gone since
 * its folder was read (a path too long to name, a folder it can't read):
 * the caller asks `du` then (disk-usage.ts), which walks any depth. A small
 * tree costs the loop a few stat calls; a `du` process costs a fork of this
 * whole process, which stops the loop ~10 ms at a server's size, and a run's
 * disk watch looks many times in its first seconds.
 */
export async function treeUsage(folders: string[], upTo: number): Promise<number[] | undefined> {
  const seen = new Set<string>();
  let entries = 0;
  const sizes: number[] = [];
  try {
    for (const folder of folders) {
      const root = await statOf(folder);
      if (!root) {
        sizes.push(0);
        continue;
      }
      let total = 0;
      const pending: { path: string; stats: BigIntStats }[] = [{ path: folder, stats: root }];
      for (let next = pending.pop(); next; next = pending.pop()) {
        const { path, stats } = next;
        if (stats.dev !== root.dev) continue;
        if (stats.nlink > 1n) {
          const key = `${stats.dev}:${stats.ino}`;
          if (seen.has(key)) continue;
          seen.add(key);
        }
        total += Number(stats.blocks) * 512;
        if (!stats.isDirectory()) continue;
        const names: string[] = [];
        for await (const entry of await opendir(path, { bufferSize: 64 })) {
          if (++entries > upTo) return undefined;
          names.push(entry.name);
        }
        const children = await Promise.all(names.map((name) => statOf(join(path, name))));
        children.forEach((childStats, index) => {
          if (childStats) pending.push({ path: join(path, names[index] ?? ""), stats: childStats });
        });
      }
      sizes.push(total);
    }
  } catch {
    return undefined;
  }
  return sizes;
}

/** An entry's stats, or undefined when it is gone; any other failure is thrown. */
async function statOf(path: string): Promise<BigIntStats | undefined> {
  try {
    return await lstat(path, { bigint: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}
