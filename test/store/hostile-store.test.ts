import { execFileSync } from "node:child_process";
import {
  lstatSync,
  mkdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  symlinkSync,
  truncateSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listRuns } from "../../runner/records/run-records/run-record.ts";
import type { ExecEnvelope } from "../../runner/work/runs/exec-envelope.ts";
import { testDocker } from "../support/docker.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";
import { diskKiB } from "../support/store-tree.ts";

/**
 * A store as a compromised box could leave it: symlinks to host files (the
 * vault, /etc/shadow, a bait file whose access time would show a read), a
 * symlink to a fifo outside that would block any reader for good, fifos and
 * a device node inside, a 10 GB sparse file and a 100,000-file tree. The
 * snapshot after a real run ends in bounded time, reads nothing outside the
 * store, copies links as links, does not fill the disk, and names what it
 * skipped in the run's store-changes.txt.
 */
const docker = await testDocker();
const root = process.getuid?.() === 0;

describe.skipIf(!docker)("a hostile store", () => {
  let deployment: RosterRoot;
  let outside: string;

  beforeAll(async () => {
    deployment = await makeRosterRoot("http://127.0.0.1:9/v1");
    outside = await mkdtemp(join(tmpdir(), "roster-outside-"));
  });
  afterAll(async () => {
    await deployment?.cleanup();
    if (outside) await rm(outside, { recursive: true, force: true });
  });

  it("snapshots in bounded time without reading outside the store, and names what it skipped", async () => {
    const store = join(deployment.paths.data, "workers/elf/store");
    mkdirSync(join(store, "tree"), { recursive: true });
    // the bait: a read of it would move its access time off the year 2000
    const bait = join(outside, "bait.txt");
    writeFileSync(bait, "host secret\n");
    const old = new Date("2000-01-01T00:00:00Z");
    utimesSync(bait, old, old);
    // the control: on this filesystem a read does move it
    const control = join(outside, "control.txt");
    writeFileSync(control, "read me\n");
    utimesSync(control, old, old);
    readFileSync(control);
    expect(statSync(control).atimeMs).not.toBe(old.getTime());
    mkdirSync(join(outside, "dir"));
    writeFileSync(join(outside, "dir/inside.txt"), "outside\n");
    execFileSync("mkfifo", [join(outside, "trap")]);
    symlinkSync(bait, join(store, "bait"));
    symlinkSync(join(outside, "dir"), join(store, "elsewhere"));
    symlinkSync(join(outside, "trap"), join(store, "trap"));
    symlinkSync("/etc/shadow", join(store, "shadow"));
    symlinkSync(deployment.paths.vault, join(store, "vault"));
    execFileSync("mkfifo", [join(store, "pipe")]);
    if (root) execFileSync("mknod", [join(store, "zero"), "c", "1", "5"]);
    writeFileSync(join(store, "huge.img"), "");
    truncateSync(join(store, "huge.img"), 10 * 1024 ** 3);
    for (let dir = 0; dir < 100; dir++) {
      mkdirSync(join(store, "tree", `d${dir}`));
      for (let file = 0; file < 1000; file++)
        writeFileSync(join(store, "tree", `d${dir}`, `f${file}`), `${dir}.${file}\n`);
    }

    const started = Date.now();
    const result = await deployment.roster(
      ["box", "exec", "elf", "--", "echo fine > ~/store/note.txt"],
      { timeoutMs: 600_000 },
    );
    const seconds = (Date.now() - started) / 1000;
    expect(result.code, result.stderr).toBe(0);
    expect(seconds).toBeLessThan(300);
    const envelope = JSON.parse(result.stdout.trim()) as ExecEnvelope;

    // nothing outside the store was read
    expect(statSync(bait).atimeMs).toBe(old.getTime());
    const snapshots = join(deployment.paths.data, "workers/elf/store-snapshots");
    const [name] = execFileSync("ls", [snapshots], { encoding: "utf8" })
      .split("\n")
      .filter((entry) => /^\d{8}-\d{6}\.\d{3}$/.test(entry));
    const snapshot = join(snapshots, name ?? "");
    // links are copied as links, pointing where they pointed
    expect(readlinkSync(join(snapshot, "bait"))).toBe(bait);
    expect(lstatSync(join(snapshot, "elsewhere")).isSymbolicLink()).toBe(true);
    expect(readlinkSync(join(snapshot, "shadow"))).toBe("/etc/shadow");
    expect(readFileSync(join(snapshot, "note.txt"), "utf8")).toBe("fine\n");
    expect(readFileSync(join(snapshot, "tree/d99/f999"), "utf8")).toBe("99.999\n");
    // no fifo, no device, no 10 GB: the snapshot is small
    expect(() => lstatSync(join(snapshot, "pipe"))).toThrow();
    expect(() => lstatSync(join(snapshot, "huge.img"))).toThrow();
    expect(diskKiB(snapshot)).toBeLessThan(1024 * 1024);

    // and the run's record names what was skipped
    const run = listRuns(deployment.paths.state, "elf").find((r) => r.id === envelope.run_id);
    const changes = readFileSync(join(run?.dir ?? "", "store-changes.txt"), "utf8");
    expect(changes).toContain("skipped  pipe (a fifo)");
    expect(changes).toContain("skipped  huge.img (over the 1 GiB per-file cap)");
    if (root) expect(changes).toContain("skipped  zero (a character device)");
    expect(changes).toMatch(/… and \d+ more lines/);
    console.log(`hostile store: the run with its snapshot took ${seconds.toFixed(1)} s`);
  }, 900_000);

  it.skipIf(!root)(
    "never hands a host file to the box's user through a link planted in .locks",
    async () => {
      const store = join(deployment.paths.data, "workers/elf/store");
      const victim = join(outside, "root-owned.txt");
      writeFileSync(victim, "the host's\n");
      const planted = await deployment.roster(
        ["box", "exec", "elf", "--", `ln -s ${victim} ~/store/.locks/planted`],
        { timeoutMs: 120_000 },
      );
      expect(planted.code, planted.stderr).toBe(0);
      expect(lstatSync(join(store, ".locks/planted")).isSymbolicLink()).toBe(true);
      // the next run's $HOME is built (the store's .locks handed to the box's user)
      const next = await deployment.roster(["box", "exec", "elf", "--", "true"], {
        timeoutMs: 120_000,
      });
      expect(next.code, next.stderr).toBe(0);
      expect(statSync(victim).uid).toBe(0);
    },
  );
});
