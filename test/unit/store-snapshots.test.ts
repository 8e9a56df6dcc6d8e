import { execFileSync } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { StoreSweep } from "../../runner/boundary/store/passes.ts";
import {
  listSnapshots,
  snapshotsToKeep,
  takeSnapshot,
} from "../../runner/boundary/store/snapshots.ts";
import { initRoots } from "../../runner/cli/does/init.ts";
import { type RosterPaths, rosterPaths } from "../../runner/ground/config/paths.ts";
import { runRoster } from "../support/cli.ts";

/**
 * The snapshot pass on the host alone (real rsync, real flock, no box): the
 * `[store] snapshots` setting, an unchanged store, rotation, and a lock file
 * a box tampered with.
 */
const roots: string[] = [];
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
});

async function deployment(): Promise<{ root: string; paths: RosterPaths; store: string }> {
  const root = await mkdtemp(join(tmpdir(), "roster-snap-"));
  roots.push(root);
  const paths = rosterPaths({ ROSTER_ROOT: root });
  await initRoots(paths);
  const store = join(paths.data, "workers/elf/store");
  mkdirSync(store, { recursive: true });
  return { root, paths, store };
}

const setSnapshots = (paths: RosterPaths, value: string) => {
  const org = join(paths.config, "org.toml");
  writeFileSync(
    org,
    readFileSync(org, "utf8").replace(/^snapshots = .*$/m, `snapshots = ${value}`),
  );
};

describe("store snapshot passes", () => {
  it("refuses a bad [store] snapshots with file, line and field", async () => {
    const { root, paths } = await deployment();
    setSnapshots(paths, "-1");
    const result = await runRoster(["validate"], { ROSTER_ROOT: root });
    expect(result.code).toBe(2);
    expect(result.stdout).toMatch(/org\.toml:\d+: store\.snapshots: .*greater or equal to 0/);
    setSnapshots(paths, '"many"');
    const again = await runRoster(["validate"], { ROSTER_ROOT: root });
    expect(again.stdout).toMatch(/store\.snapshots: must be a whole number/);
  });

  it("keeps the last N, makes none for an unchanged store, and none at all with 0", async () => {
    const { paths, store } = await deployment();
    setSnapshots(paths, "3");
    const keep = snapshotsToKeep(paths);
    expect(keep).toBe(3);
    const pass = () => takeSnapshot(paths, { worker: "elf" }, { reason: "run", keep, waitMs: 0 });
    for (let i = 0; i < 5; i++) {
      writeFileSync(join(store, `f${i}`), `${i}\n`);
      expect((await pass())?.snapshot).toBeDefined();
    }
    expect((await pass())?.snapshot).toBeUndefined();
    const kept = listSnapshots(paths, { worker: "elf" });
    expect(kept).toHaveLength(3);
    expect(kept.at(-1)?.added).toBe(1);
    expect(
      readdirSync(join(paths.data, "workers/elf/store-snapshots", kept.at(-1)?.name ?? "")).sort(),
    ).toEqual(["f0", "f1", "f2", "f3", "f4"]);

    setSnapshots(paths, "0");
    writeFileSync(join(store, "f9"), "9\n");
    expect(
      await takeSnapshot(
        paths,
        { worker: "elf" },
        { reason: "run", keep: snapshotsToKeep(paths), waitMs: 0 },
      ),
    ).toBeUndefined();
    expect(listSnapshots(paths, { worker: "elf" })).toHaveLength(3);
  });

  it("sweeps every store and channel store once a day", async () => {
    const { paths, store } = await deployment();
    writeFileSync(join(store, "a"), "a\n");
    const bob = join(paths.data, "workers/bob/store");
    mkdirSync(bob, { recursive: true });
    writeFileSync(join(bob, "b"), "b\n");
    const channel = join(paths.data, "workers/bob/channel-stores/slack-t1-c1");
    mkdirSync(channel, { recursive: true });
    writeFileSync(join(channel, "c"), "c\n");
    const notes: string[] = [];
    const sweep = new StoreSweep(paths, (text) => notes.push(text));
    sweep.tick();
    await sweep.idle();
    expect(listSnapshots(paths, { worker: "elf" })[0]?.reason).toBe("sweep");
    expect(listSnapshots(paths, { worker: "bob" })).toHaveLength(1);
    expect(listSnapshots(paths, { worker: "bob", channel: "slack-t1-c1" })).toHaveLength(1);
    expect(notes.join("\n")).toContain("bob's channel store slack-t1-c1: snapshot");
    // not due again until a day has passed
    writeFileSync(join(store, "a"), "changed\n");
    sweep.tick();
    await sweep.idle();
    expect(listSnapshots(paths, { worker: "elf" })).toHaveLength(1);
  });

  it("snapshots and restores a channel store on its own", async () => {
    const { root, paths } = await deployment();
    const channel = "term-ada-elf";
    const channelStore = join(paths.data, "workers/elf/channel-stores", channel);
    mkdirSync(channelStore, { recursive: true });
    writeFileSync(join(channelStore, "minutes.md"), "kept\n");
    const target = { worker: "elf", channel };
    const made = await takeSnapshot(paths, target, { reason: "run", keep: 3, waitMs: 0 });
    expect(made?.snapshot).toBeDefined();
    expect(existsSync(join(paths.data, "workers/elf/channel-store-snapshots", channel))).toBe(true);
    expect(listSnapshots(paths, { worker: "elf" })).toHaveLength(0);
    writeFileSync(join(channelStore, "minutes.md"), "garbled\n");
    const env = { ROSTER_ROOT: root };
    const restored = await runRoster(["worker", "restore", "elf", "--channel", channel], env);
    expect(restored.code, restored.stderr).toBe(0);
    expect(restored.stdout).toContain(`restored elf's channel store ${channel} from snapshot`);
    expect(readFileSync(join(channelStore, "minutes.md"), "utf8")).toBe("kept\n");
    const bad = await runRoster(["worker", "restore", "elf", "--channel", "../x"], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('"../x" is not a channel id');
  });

  it("a restore leaves in place what no snapshot can hold (a fifo, a file over the cap), and says so", async () => {
    const { root, paths, store } = await deployment();
    writeFileSync(join(store, "a"), "1\n");
    const first = await takeSnapshot(
      paths,
      { worker: "elf" },
      { reason: "run", keep: 5, waitMs: 0 },
    );
    writeFileSync(join(store, "a"), "2\n");
    execFileSync("mkfifo", [join(store, "pipe[1]")]);
    writeFileSync(join(store, "huge.img"), "");
    truncateSync(join(store, "huge.img"), 1024 ** 3 + 1);
    const result = await runRoster(
      ["worker", "restore", "elf", "--from", first?.snapshot?.name ?? "?"],
      { ROSTER_ROOT: root },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(readFileSync(join(store, "a"), "utf8")).toBe("1\n");
    expect(lstatSync(join(store, "pipe[1]")).isFIFO()).toBe(true);
    expect(statSync(join(store, "huge.img")).size).toBe(1024 ** 3 + 1);
    expect(result.stdout).toMatch(
      /left in place, since no snapshot holds them: (pipe\[1\], huge\.img|huge\.img, pipe\[1\])/,
    );
  });

  it("refuses a lock file a box replaced with a fifo or a symlink, without hanging or writing outside", async () => {
    const { root, paths, store } = await deployment();
    writeFileSync(join(store, "a"), "a\n");
    mkdirSync(join(store, ".locks"));
    execFileSync("mkfifo", [join(store, ".locks/store")]);
    const target = { worker: "elf" };
    await expect(
      takeSnapshot(paths, target, { reason: "run", keep: 3, waitMs: 0 }),
    ).rejects.toThrow(/\.locks\/store is not a regular file/);
    await rm(join(store, ".locks"), { recursive: true });
    const outside = join(root, "outside");
    mkdirSync(outside);
    symlinkSync(outside, join(store, ".locks"));
    await expect(
      takeSnapshot(paths, target, { reason: "run", keep: 3, waitMs: 0 }),
    ).rejects.toThrow(/\.locks is not a folder of the store/);
    expect(existsSync(join(outside, "store"))).toBe(false);
    expect(listSnapshots(paths, target)).toHaveLength(0);
  });
});
