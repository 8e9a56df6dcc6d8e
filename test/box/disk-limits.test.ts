import { existsSync, readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { diskUsage } from "../../runner/ground/files/disk-usage.ts";
import { listRuns, readRecord } from "../../runner/records/run-records/run-record.ts";
import type { ExecEnvelope } from "../../runner/work/runs/exec-envelope.ts";
import { testDocker } from "../support/docker.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";
import { mountSmallDisk, setStoreReserve } from "../support/small-disk.ts";

/**
 * A store can't fill the host's disk. A box writing past its store's limit is
 * stopped near it (ended_by disk); on a small data filesystem made for the
 * test (a tmpfs over the workers' folders), a box filling it toward the
 * reserve is stopped, while another worker's box that isn't writing finishes.
 * The writers write 2 MB at a time with a pause, about 40 MB/s, so "near"
 * means something: the watch looks every half second.
 */
const docker = await testDocker();
const root = process.getuid?.() === 0;
if (process.env.CI === "true" && !root)
  throw new Error("the disk-limit suite needs root in CI (it mounts a tmpfs)");

const MB = 1024 * 1024;
const writer = (chunks: number) =>
  `for i in $(seq 1 ${chunks}); do dd if=/dev/zero of=$HOME/store/blob-$i bs=1M count=2 status=none || exit 3; sleep 0.05; done; echo wrote-all`;

describe.skipIf(!docker)("disk limits", () => {
  let deployment: RosterRoot;
  let unmount: (() => void) | undefined;

  beforeAll(async () => {
    deployment = await makeRosterRoot("http://127.0.0.1:9/v1");
    for (const worker of ["gnome", "bob"]) {
      await mkdir(join(deployment.paths.config, "workers", worker), { recursive: true });
      await writeFile(
        join(deployment.paths.config, "workers", worker, "worker.toml"),
        `name = "${worker}"\n`,
      );
    }
    await writeFile(
      join(deployment.paths.config, "workers/elf/worker.toml"),
      'name = "elf"\n\n[store]\nmax_size = "30m"\n',
    );
  });
  afterAll(async () => {
    unmount?.();
    await deployment?.cleanup();
  });

  const exec = async (worker: string, command: string) => {
    const result = await deployment.roster(
      ["box", "exec", worker, "--timeout", "120", "--", command],
      {
        timeoutMs: 180_000,
      },
    );
    return {
      code: result.code,
      stderr: result.stderr,
      envelope: JSON.parse(result.stdout.trim() || "{}") as ExecEnvelope,
    };
  };
  const record = (worker: string, runId: string | undefined) =>
    readRecord(listRuns(deployment.paths.state, worker).find((run) => run.id === runId)?.dir ?? "");

  it("stops a box whose store passes [store] max_size, near the limit, and records why", async () => {
    const store = join(deployment.paths.data, "workers/elf/store");
    const { code, envelope } = await exec("elf", writer(60));
    expect(code).toBe(1);
    expect(envelope).toMatchObject({ status: "failed", signal: "SIGKILL", reason: "disk" });
    expect(envelope.stdout).not.toContain("wrote-all");
    expect(envelope.error).toMatch(
      /^its store holds \d+m on disk, over its 30m limit \(\[store\] max_size\)$/,
    );
    expect(record("elf", envelope.run_id)).toMatchObject({ ended_by: "disk", state: "failed" });
    // the snapshot pass does not keep the overflow, and says so in the run's record
    const dir = listRuns(deployment.paths.state, "elf").find(
      (run) => run.id === envelope.run_id,
    )?.dir;
    expect(readFileSync(join(dir ?? "", "store-changes.txt"), "utf8")).toMatch(
      /not snapshotted: it holds \d+m, over its 30m limit \(\[store\] max_size\)/,
    );
    expect(existsSync(join(deployment.paths.data, "workers/elf/store-snapshots"))).toBe(false);
    // stopped near the limit: well short of the 120 MB it would have written
    const [size] = await diskUsage([store]);
    expect(size).toBeGreaterThan(30 * MB);
    expect(size).toBeLessThan(60 * MB);
  });

  it.skipIf(!root)(
    "stops the box filling the disk toward the reserve; another worker's box goes on",
    async () => {
      // a 160 MB data filesystem for the workers' folders, half of it kept free
      await setStoreReserve(deployment.paths, 0.5);
      const workers = join(deployment.paths.data, "workers");
      unmount = await mountSmallDisk(workers, "160m");
      // two boxes at once, each with its run's own gateway
      const results = await Promise.all([
        exec("gnome", writer(70)),
        exec("bob", "sleep 6; echo still-here"),
      ]);
      const [filler, bystander] = results;
      if (!filler || !bystander) throw new Error("both boxes should have answered");
      expect(filler.envelope, JSON.stringify(filler)).toMatchObject({
        status: "failed",
        reason: "disk",
      });
      expect(filler.envelope.error).toMatch(
        /^the data filesystem is down to \d+\.\d% free, under the 50% kept for every worker \(\[store\] reserve\), and this box was writing to it$/,
      );
      expect(record("gnome", filler.envelope.run_id)).toMatchObject({ ended_by: "disk" });
      // the other worker's box was not writing: it finished
      expect(bystander.code, bystander.stderr).toBe(0);
      expect(bystander.envelope).toMatchObject({ status: "ok", stdout: "still-here\n" });
      // and the filesystem kept most of its reserve
      const [used] = await diskUsage([workers]);
      expect(used).toBeLessThan(120 * MB);
    },
  );
});
