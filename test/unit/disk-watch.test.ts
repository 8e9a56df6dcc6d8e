/**
 * The disk watch (runner/work/runs/disk-watch.ts) on real folders, as it
 * counts once a folder outgrows the count made in the server's process: a
 * store that passes WALK_UP_TO entries and then its limit is still stopped,
 * by `du`'s count, and the message names the folder and the setting.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { WALK_UP_TO } from "../../runner/ground/files/disk-usage.ts";
import { DiskWatch } from "../../runner/work/runs/disk-watch.ts";

const root = mkdtempSync(join(tmpdir(), "disk-watch-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("the disk watch past the in-process count", () => {
  it("stops a store that grows past the entries counted in process and then past its limit", async () => {
    const store = join(root, "store");
    mkdirSync(store);
    let over: string | undefined;
    const watch = new DiskWatch({
      folders: [{ path: store, what: "its store" }],
      limits: { maxBytes: 4 * 1024 * 1024, homeMaxBytes: 0, reserve: 0 },
      onOver: (message) => {
        over = message;
      },
    });
    await watch.start();
    try {
      // more entries than the process counts itself, well under the limit
      for (let i = 0; i <= WALK_UP_TO; i++) writeFileSync(join(store, `note-${i}`), "n");
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(over).toBeUndefined();
      writeFileSync(join(store, "big"), Buffer.alloc(6 * 1024 * 1024, 7));
      const deadline = Date.now() + 10_000;
      while (!over && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 50));
      expect(over).toMatch(
        /^its store holds \d+m on disk, over its 4m limit \(\[store\] max_size\)$/,
      );
    } finally {
      watch.stop();
    }
  });
});
