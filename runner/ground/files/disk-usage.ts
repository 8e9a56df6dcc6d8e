import { execFile } from "node:child_process";
import { statfs } from "node:fs/promises";
import { treeUsage } from "./tree-usage.ts";

/**
 * How much of the disk a folder takes, and how much of a filesystem is free:
 * `du`'s count for the first (blocks on disk, so a sparse file counts what it
 * really holds; symlinks never followed; one filesystem), statfs for the second.
 */

/**
 * Entries counted in this process before a measure hands the folders to `du`
 * instead. A stat here costs this process ~25 µs (bench/RESULTS.md), a `du`
 * the fork of this whole process: ~10 ms for a server, as much as 400
 * entries. A run's $HOME, clones and fresh store hold about 70.
 */
export const WALK_UP_TO = 256;

/**
 * Filesystems a walk in this process may read (statfs f_type): local ones,
 * whose stat calls answer. On any other (NFS, SMB, FUSE, 9p) a stat can hang
 * for as long as the server is away, and would hold one of the few threads
 * every file call of this process shares; `du` hangs alone there, and is killed.
 */
const LOCAL_FILESYSTEMS = new Set([
  0xef53, // ext2, ext3, ext4
  0x58465342, // xfs
  0x9123683e, // btrfs
  0x01021994, // tmpfs
  0x794c7630, // overlay
  0x2fc12fc1, // zfs
  0xf2f52010, // f2fs
]);

async function local(folder: string): Promise<boolean> {
  const stats = await statfs(folder).catch(() => undefined);
  // a folder that isn't there counts 0 either way
  return stats === undefined || LOCAL_FILESYSTEMS.has(stats.type);
}

/**
 * Bytes on disk under each folder (0 for one that isn't there), and how they
 * were counted: in this process for a small tree on a local filesystem
 * (tree-usage.ts, up to `walkUpTo` entries; 0 never), by a `du` process
 * otherwise.
 */
export async function measureDisk(
  folders: string[],
  walkUpTo = WALK_UP_TO,
): Promise<{ sizes: number[]; by: "walk" | "du" }> {
  const walkable = walkUpTo > 0 && (await Promise.all(folders.map(local))).every(Boolean);
  const walked = walkable ? treeUsage(folders, walkUpTo) : undefined;
  return walked ? { sizes: walked, by: "walk" } : { sizes: await duUsage(folders), by: "du" };
}

/** Bytes on disk under each folder (0 for one that isn't there). */
export async function diskUsage(folders: string[]): Promise<number[]> {
  return (await measureDisk(folders)).sizes;
}

/** The same, asked of `du`. */
export function duUsage(folders: string[]): Promise<number[]> {
  return new Promise((resolve) => {
    execFile(
      "du",
      ["-s", "-B1", "-x", "-P", ...folders],
      // a du that can't finish (a filesystem that stopped answering) is killed, never left behind
      { maxBuffer: 1 << 20, timeout: 60_000, killSignal: "SIGKILL" },
      // du says what it could read even when some of it wasn't readable: that is still the floor
      (_error, stdout) => {
        const sizes = new Map<string, number>();
        for (const line of String(stdout).split("\n")) {
          const tab = line.indexOf("\t");
          if (tab > 0) sizes.set(line.slice(tab + 1), Number(line.slice(0, tab)));
        }
        resolve(folders.map((folder) => sizes.get(folder) ?? 0));
      },
    );
  });
}

/** The share of the filesystem holding `dir` that is free for ordinary users. */
export async function freeShare(dir: string): Promise<number> {
  const stats = await statfs(dir);
  return stats.blocks > 0 ? stats.bavail / stats.blocks : 1;
}
