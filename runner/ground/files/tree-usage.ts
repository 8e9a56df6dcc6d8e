import { lstatSync, opendirSync, type Stats } from "node:fs";
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
 *
 * Synchronous, on purpose: the caller walks only local filesystems, whose
 * stat calls answer at once, and at most `upTo` entries. Through the promise
 * API each entry cost a trip through the thread pool, a promise and a BigInt
 * stats object: a run's ~50 entries took 4.2 ms of this process's CPU a look,
 * against 0.9 ms here (bench/RESULTS.md), and a run's first second holds
 * several looks, on the cores its box is starting on.
 */
export function treeUsage(folders: string[], upTo: number): number[] | undefined {
  const seen = new Set<string>();
  let entries = 0;
  const sizes: number[] = [];
  try {
    for (const folder of folders) {
      const root = statOf(folder);
      if (!root) {
        sizes.push(0);
        continue;
      }
      let total = 0;
      const pending: { path: string; stats: Stats }[] = [{ path: folder, stats: root }];
      for (let next = pending.pop(); next; next = pending.pop()) {
        const { path, stats } = next;
        if (stats.dev !== root.dev) continue;
        if (stats.nlink > 1) {
          const key = inodeKey(path, stats);
          if (seen.has(key)) continue;
          seen.add(key);
        }
        total += stats.blocks * 512;
        if (!stats.isDirectory()) continue;
        // a few entries at a time, never the whole folder: it may hold millions
        const dir = opendirSync(path, { bufferSize: 64 });
        try {
          for (let entry = dir.readSync(); entry; entry = dir.readSync()) {
            if (++entries > upTo) return undefined;
            const child = join(path, entry.name);
            const childStats = statOf(child);
            if (childStats) pending.push({ path: child, stats: childStats });
          }
        } finally {
          dir.closeSync();
        }
      }
      sizes.push(total);
    }
  } catch {
    return undefined;
  }
  return sizes;
}

/** An entry's stats, or undefined when it is gone; any other failure is thrown. */
function statOf(path: string): Stats | undefined {
  return lstatSync(path, { throwIfNoEntry: false });
}

/**
 * Which inode an entry is, exactly: a number past 2^53 (a huge XFS, say) is
 * not exact as a double, and two inodes taken for one would count too little,
 * so such an entry is asked again as BigInt.
 */
function inodeKey(path: string, stats: Stats): string {
  if (Number.isSafeInteger(stats.ino) && Number.isSafeInteger(stats.dev))
    return `${stats.dev}:${stats.ino}`;
  const exact = lstatSync(path, { bigint: true });
  return `${exact.dev}:${exact.ino}`;
}
