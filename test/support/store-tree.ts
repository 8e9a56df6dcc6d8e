import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { lstatSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";

/**
 * A store folder as test assertions see it: every entry's path mapped to its
 * content hash and mode (a symlink to its target, a folder to "dir"), read
 * without following a link. `.locks` is the boxes' and is left out, as the
 * snapshot pass leaves it out.
 */
export function treeOf(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string, prefix: string) => {
    for (const name of readdirSync(dir).sort()) {
      if (!prefix && name === ".locks") continue;
      const path = join(dir, name);
      const rel = `${prefix}${name}`;
      const stat = lstatSync(path);
      if (stat.isSymbolicLink()) out[rel] = `link ${readlinkSync(path)}`;
      else if (stat.isDirectory()) {
        out[rel] = `dir ${(stat.mode & 0o7777).toString(8)}`;
        walk(path, `${rel}/`);
      } else if (stat.isFile())
        out[rel] =
          `${(stat.mode & 0o7777).toString(8)} ${createHash("sha256").update(readFileSync(path)).digest("hex")}`;
      else out[rel] = "special";
    }
  };
  walk(root, "");
  return out;
}

/** Disk usage in KiB of the paths, `du` counting a file hard-linked twice once. */
export function diskKiB(...paths: string[]): number {
  const out = execFileSync("du", ["-sk", "-c", ...paths], { encoding: "utf8" });
  const total = out.trim().split("\n").at(-1) ?? "";
  return Number(total.split(/\s+/)[0]);
}
