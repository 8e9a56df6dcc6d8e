import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { diskUsage } from "../../runner/ground/files/disk-usage.ts";
import { listRuns, readRecord } from "../../runner/records/run-records/run-record.ts";
import type { ExecEnvelope } from "../../runner/work/runs/exec-envelope.ts";
import { testDocker } from "../support/docker.ts";
import { makeCanonical, writeRepoConnection } from "../support/repos.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";
import { mountSmallDisk, setStoreReserve } from "../support/small-disk.ts";

/**
 * A box can't fill the host's disk through its own $HOME or its repo clones:
 * the run folder that keeps them on the host is measured like the store, and
 * a box writing past `[store] home_max_size` is stopped near it (ended_by
 * disk, the reason in its record, `box exec` answering reason "disk", never
 * "ok"). On a small filesystem made for the test (a tmpfs over the run
 * folders), a box filling $HOME toward `[store] reserve` is stopped too. The
 * writers write 2 MB at a time with a pause, about 40 MB/s.
 */
const docker = await testDocker();
const root = process.getuid?.() === 0;
if (process.env.CI === "true" && !root)
  throw new Error("the $HOME limit suite needs root in CI (it mounts a tmpfs)");

const MB = 1024 * 1024;
const writer = (dir: string, chunks: number) =>
  `for i in $(seq 1 ${chunks}); do dd if=/dev/zero of=${dir}/blob-$i bs=1M count=2 status=none || exit 3; sleep 0.05; done; echo wrote-all`;
// how much the box had written when the watch saw it depends on the disk's speed (a fast
// one takes a 3 GB dd past 1g between two looks): the message, not the figure, is the point
const HOME_OVER =
  /^its \$HOME and repo clones hold \d+[mg] on disk, over its 20m limit \(\[store\] home_max_size\)$/;

describe.skipIf(!docker)("the $HOME and clones limit", () => {
  let deployment: RosterRoot;
  let unmount: (() => void) | undefined;

  beforeAll(async () => {
    deployment = await makeRosterRoot("http://127.0.0.1:9/v1");
    const workers = {
      elf: '[store]\nhome_max_size = "20m"\n',
      gnome: '[store]\nhome_max_size = "20m"\n',
      bob: "",
      imp: '[store]\nmax_size = "20m"\n',
    };
    for (const [worker, extra] of Object.entries(workers)) {
      await mkdir(join(deployment.paths.config, "workers", worker), { recursive: true });
      await writeFile(
        join(deployment.paths.config, "workers", worker, "worker.toml"),
        `name = "${worker}"\n\n${extra}`,
      );
    }
    await writeRepoConnection(
      deployment.paths,
      "site",
      makeCanonical({ "README.md": "hi\n" }),
      "gnome",
    );
  });
  afterAll(async () => {
    unmount?.();
    await deployment?.cleanup();
  });

  const exec = async (worker: string, command: string) => {
    const result = await deployment.roster(
      ["box", "exec", worker, "--timeout", "120", "--", command],
      { timeoutMs: 180_000 },
    );
    return {
      code: result.code,
      stderr: result.stderr,
      envelope: JSON.parse(result.stdout.trim() || "{}") as ExecEnvelope,
    };
  };
  const runFolder = (worker: string, runId: string | undefined) =>
    listRuns(deployment.paths.state, worker).find((run) => run.id === runId)?.dir ?? "";

  it("stops a box whose $HOME passes [store] home_max_size, near the limit, and records why", async () => {
    const { code, envelope } = await exec("elf", writer("$HOME", 60));
    expect(code).toBe(1);
    expect(envelope).toMatchObject({ status: "failed", signal: "SIGKILL", reason: "disk" });
    expect(envelope.stdout).not.toContain("wrote-all");
    expect(envelope.error).toMatch(HOME_OVER);
    const dir = runFolder("elf", envelope.run_id);
    const record = readRecord(dir);
    expect(record).toMatchObject({ ended_by: "disk", state: "failed" });
    expect(record?.error).toMatch(HOME_OVER);
    // stopped near the limit: well short of the 120 MB it would have written
    const [size] = await diskUsage([join(dir, "home")]);
    expect(size).toBeGreaterThan(20 * MB);
    expect(size).toBeLessThan(50 * MB);
  });

  it("bounds $HOME by the store's max_size where home_max_size is unset: the issue's 3 GB dd is stopped", async () => {
    const { envelope } = await exec(
      "imp",
      "dd if=/dev/zero of=$HOME/fill.bin bs=1M count=3000 status=none; echo wrote",
    );
    expect(envelope).toMatchObject({ status: "failed", reason: "disk" });
    expect(envelope.stdout).not.toContain("wrote");
    expect(envelope.error).toMatch(HOME_OVER);
    const dir = runFolder("imp", envelope.run_id);
    expect(readRecord(dir)).toMatchObject({ ended_by: "disk", state: "failed" });
    // at page-cache speed polling overshoots by the write rate times the gap and the kill
    // (docs/store.md): a loaded machine's slower kill lets dd write more, never all 3 GB
    const [size] = await diskUsage([join(dir, "home")]);
    expect(size).toBeLessThan(1500 * MB);
  });

  it("counts what a box writes in its repo clones toward the same limit", async () => {
    const { envelope } = await exec("gnome", writer("$HOME/mnt/site", 60));
    expect(envelope).toMatchObject({ status: "failed", reason: "disk" });
    expect(envelope.error).toMatch(HOME_OVER);
    const dir = runFolder("gnome", envelope.run_id);
    expect(readRecord(dir)).toMatchObject({ ended_by: "disk" });
    const [home, clones] = await diskUsage([join(dir, "home"), join(dir, "repos")]);
    expect(home).toBeLessThan(5 * MB);
    expect(clones).toBeGreaterThan(20 * MB);
    expect(clones).toBeLessThan(50 * MB);
  });

  it.skipIf(!root)(
    "stops a box filling the run folders' disk toward the reserve; another worker's box goes on",
    async () => {
      // a 160 MB filesystem for the run folders, half of it kept free; bob's $HOME has the default 10g limit
      await setStoreReserve(deployment.paths, 0.5);
      const runs = join(deployment.paths.state, "runs");
      unmount = await mountSmallDisk(runs, "160m");
      const [filler, bystander] = await Promise.all([
        exec("bob", writer("$HOME", 70)),
        exec("elf", "sleep 6; echo still-here"),
      ]);
      if (!filler || !bystander) throw new Error("both boxes should have answered");
      expect(filler.envelope, JSON.stringify(filler)).toMatchObject({
        status: "failed",
        reason: "disk",
      });
      expect(filler.envelope.error).toMatch(
        /^the run folders' filesystem is down to \d+\.\d% free, under the 50% kept for every worker \(\[store\] reserve\), and this box was writing to it$/,
      );
      expect(readRecord(runFolder("bob", filler.envelope.run_id))).toMatchObject({
        ended_by: "disk",
      });
      expect(bystander.code, bystander.stderr).toBe(0);
      expect(bystander.envelope).toMatchObject({ status: "ok", stdout: "still-here\n" });
      // the filesystem kept most of its reserve
      const [used] = await diskUsage([runs]);
      expect(used).toBeLessThan(120 * MB);
    },
  );
});
