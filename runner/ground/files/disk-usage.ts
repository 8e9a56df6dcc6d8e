import { execFile } from "node:child_process";
import { statfs } from "node:fs/promises";

/**
 * How much of the disk a folder takes, and how much of a filesystem is free:
 * `du` for the first (blocks on disk, so a sparse file counts what it really
 * holds; symlinks never followed; one filesystem), statfs for the second.
 */
/** Bytes on disk under each folder (0 for one that isn't there). */
export function diskUsage(folders: string[]): Promise<number[]> {
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
