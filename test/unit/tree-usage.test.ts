/**
 * A small tree's disk use counted in this process
 * (runner/ground/files/tree-usage.ts, disk-usage.ts) against real `du` on the
 * same trees: a sparse file, hard links inside a folder and across two,
 * symlinks, a folder given inside another, one that isn't there. Past its
 * bound, or where it can't see everything (a path longer than the kernel
 * names), it hands the count to `du` and never reports less.
 */
import { execFileSync } from "node:child_process";
import {
  linkSync,
  mkdirSync,
  mkdtempSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { duUsage, measureDisk } from "../../runner/ground/files/disk-usage.ts";
import { treeUsage } from "../../runner/ground/files/tree-usage.ts";

const root = mkdtempSync(join(tmpdir(), "tree-usage-"));
// rm walks any depth; the deep case goes past what a path can name
afterAll(() => execFileSync("rm", ["-rf", root]));

function tree(name: string): string {
  const dir = join(root, name);
  mkdirSync(join(dir, "deep/er/still"), { recursive: true });
  writeFileSync(join(dir, "small"), "x");
  writeFileSync(join(dir, "deep/er/block"), Buffer.alloc(64 * 1024, 1));
  writeFileSync(join(dir, "deep/er/still/odd name\nwith a newline"), Buffer.alloc(9000, 2));
  // a sparse file holds what was written, not its length
  writeFileSync(join(dir, "sparse"), "");
  truncateSync(join(dir, "sparse"), 256 * 1024 * 1024);
  linkSync(join(dir, "deep/er/block"), join(dir, "block-again"));
  symlinkSync("/etc", join(dir, "to-etc"));
  symlinkSync(join(dir, "deep"), join(dir, "to-deep"));
  return dir;
}

describe("disk use counted in this process", () => {
  it("counts each folder exactly as du does, hard links and overlaps included", async () => {
    const a = tree("a");
    const b = tree("b");
    // a file linked from both: counted in the first folder given only
    linkSync(join(a, "deep/er/block"), join(b, "from-a"));
    const cases = [
      [a],
      [a, b],
      [b, a],
      [a, join(a, "deep")],
      [join(a, "deep"), a],
      [a, join(root, "none")],
    ];
    for (const folders of cases) {
      const walked = treeUsage(folders, 1_000);
      expect(walked, folders.join(" ")).toEqual(await duUsage(folders));
    }
    const [withSparse = 0] = treeUsage([a], 1_000) ?? [];
    expect(withSparse).toBeLessThan(1024 * 1024);
    expect(withSparse).toBeGreaterThan(64 * 1024);
  });

  it("past its bound it stops, and the measure is du's", async () => {
    const many = join(root, "many");
    mkdirSync(many);
    for (let i = 0; i < 120; i++) writeFileSync(join(many, `f${i}`), "y");
    expect(treeUsage([many], 100)).toBeUndefined();
    const measured = await measureDisk([many], 100);
    expect(measured.by).toBe("du");
    expect(measured.sizes).toEqual(await duUsage([many]));
    expect((await measureDisk([many], 1_000)).by).toBe("walk");
  });

  it("a tree deeper than a path can name is counted by du, never as less", async () => {
    const deep = join(root, "deep");
    const segment = "d".repeat(200);
    // made below PATH_MAX a folder at a time, from inside, as a box could
    mkdirSync(deep);
    // bash's cd goes on by the relative name where the whole path is too long to name
    execFileSync("bash", [
      "-c",
      'cd "$1" && for i in $(seq 1 30); do mkdir "$2" && cd "$2"; done && head -c 200000 /dev/urandom > hidden',
      "bash",
      deep,
      segment,
    ]);
    expect(treeUsage([deep], 1_000)).toBeUndefined();
    const measured = await measureDisk([deep]);
    expect(measured.by).toBe("du");
    expect(measured.sizes[0]).toBeGreaterThan(200_000);
  });
});
