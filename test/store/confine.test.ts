import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { storeRsync } from "../../runner/boundary/store/rsync.ts";
import { treeOf } from "../support/store-tree.ts";

/**
 * The store's end of a pass runs chrooted into the store, so what keeps a
 * pass inside it is the kernel, not how carefully an rsync version opens
 * paths. Shown the strongest way: a pass told to follow every symlink
 * (`--copy-links`) over a store full of links to host files and folders
 * still brings back nothing from outside.
 */
describe("the store's end of an rsync pass", () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "roster-confine-"));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("reads nothing outside the store even when told to follow every link", async () => {
    const outside = join(dir, "outside");
    const store = join(dir, "store");
    const copy = join(dir, "copy");
    mkdirSync(join(outside, "folder"), { recursive: true });
    mkdirSync(join(store, "notes"), { recursive: true });
    mkdirSync(copy);
    writeFileSync(join(outside, "canary"), "HOST CANARY\n");
    writeFileSync(join(outside, "folder", "inside"), "HOST CANARY\n");
    writeFileSync(join(store, "notes", "today.md"), "the store's own\n");
    symlinkSync(join(outside, "canary"), join(store, "file-link"));
    symlinkSync(join(outside, "folder"), join(store, "folder-link"));
    symlinkSync("../outside/canary", join(store, "relative-link"));
    symlinkSync("/etc/hostname", join(store, "etc-link"));
    // a link inside the store is followed, and stays inside it
    symlinkSync("notes/today.md", join(store, "own-link"));

    const result = await storeRsync(["--copy-links"], { fromStore: store, to: `${copy}/` });

    const tree = treeOf(copy);
    expect(Object.keys(tree).sort()).toEqual(["notes", "notes/today.md", "own-link"]);
    expect(readFileSync(join(copy, "own-link"), "utf8")).toBe("the store's own\n");
    expect(JSON.stringify(tree)).not.toContain("link ");
    // each link to the host is named as pointing at nothing
    expect(result.errors.join("\n")).toContain('symlink has no referent: "/file-link"');
    expect(result.errors.join("\n")).toContain('symlink has no referent: "/etc-link"');
  });
});
