import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { takeSnapshot } from "../../runner/boundary/store/snapshots.ts";
import { listRuns, readRecord } from "../../runner/records/run-records/run-record.ts";
import type { ExecEnvelope } from "../../runner/work/runs/exec-envelope.ts";
import { testDocker } from "../support/docker.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";
import { treeOf } from "../support/store-tree.ts";

/**
 * Store snapshots taken as real runs settle, and `roster worker restore`
 * putting them back: one bad run undone byte for byte, the undo undone, and a
 * restore refused while a run of the worker is going or the store lock is held.
 */
const docker = await testDocker();

interface Listed {
  name: string;
  reason: string;
  run?: string;
}

describe.skipIf(!docker)("store snapshots and roster worker restore", () => {
  let deployment: RosterRoot;
  let store: string;
  let snapshots: string;

  beforeAll(async () => {
    deployment = await makeRosterRoot("http://127.0.0.1:9/v1");
    store = join(deployment.paths.data, "workers/elf/store");
    snapshots = join(deployment.paths.data, "workers/elf/store-snapshots");
  });
  afterAll(async () => {
    await deployment?.cleanup();
  });

  const exec = async (command: string): Promise<ExecEnvelope & { run_id: string }> => {
    const result = await deployment.roster(["box", "exec", "elf", "--", command], {
      timeoutMs: 120_000,
    });
    expect(result.code, result.stderr).toBe(0);
    const envelope = JSON.parse(result.stdout.trim()) as ExecEnvelope;
    if (!envelope.run_id) throw new Error(`no run id in ${result.stdout}`);
    return { ...envelope, run_id: envelope.run_id };
  };
  const runDirOf = (id: string) => {
    const run = listRuns(deployment.paths.state, "elf").find((r) => r.id === id);
    if (!run) throw new Error(`no record of run ${id}`);
    return run.dir;
  };
  const list = async (): Promise<Listed[]> => {
    const result = await deployment.roster(["worker", "restore", "elf", "--list", "--json"]);
    expect(result.code, result.stderr).toBe(0);
    return JSON.parse(result.stdout) as Listed[];
  };

  it("undoes a run that deleted half the store, byte for byte; a second restore undoes the first", async () => {
    const first = await exec(
      "cd ~/store && mkdir -p notes/deep && for i in $(seq 1 20); do head -c $((i*997)) /dev/urandom > notes/n$i.bin; done && echo hello > notes/deep/hi.txt && chmod 600 notes/n3.bin && ln -s notes/deep/hi.txt latest",
    );
    const good = treeOf(store);
    expect(Object.keys(good)).toHaveLength(24);
    // the run's record says what it did to the store, and `runs show` lists it
    const firstChanges = readFileSync(join(runDirOf(first.run_id), "store-changes.txt"), "utf8");
    expect(firstChanges).toContain("added    notes/n7.bin");
    const shown = await deployment.roster(["runs", "show", first.run_id]);
    expect(shown.stdout).toContain("store changes:");
    expect(shown.stdout).toContain("added    latest -> notes/deep/hi.txt");

    const bad = await exec(
      "cd ~/store/notes && rm n1.bin n1[0-9].bin n20.bin && echo garbled > n2.bin",
    );
    const damaged = treeOf(store);
    expect(Object.keys(damaged)).toHaveLength(12);
    const badChanges = readFileSync(join(runDirOf(bad.run_id), "store-changes.txt"), "utf8");
    expect(badChanges).toContain("removed  notes/n15.bin");
    expect(badChanges).toContain("changed  notes/n2.bin");

    const listed = await list();
    expect(listed.map((s) => s.run)).toEqual([first.run_id, bad.run_id]);
    const table = await deployment.roster(["worker", "restore", "elf", "--list"]);
    expect(table.stdout).toContain(`after run ${bad.run_id}`);

    const restored = await deployment.roster(["worker", "restore", "elf", "--before", bad.run_id]);
    expect(restored.code, restored.stderr).toBe(0);
    expect(restored.stdout).toContain(
      `from snapshot ${listed[0]?.name} (made after run ${first.run_id})`,
    );
    expect(treeOf(store)).toEqual(good);

    // the restored store is the box's again: a run writes into it, and the
    // snapshot it came from is not changed with it (a copy, never a hard link)
    await exec("echo appended >> ~/store/notes/n5.bin");
    const kept = treeOf(join(snapshots, listed[0]?.name ?? ""));
    expect(kept["notes/n5.bin"]).toBe(good["notes/n5.bin"]);

    const undone = await deployment.roster([
      "worker",
      "restore",
      "elf",
      "--from",
      listed[1]?.name ?? "",
    ]);
    expect(undone.code, undone.stderr).toBe(0);
    expect(treeOf(store)).toEqual(damaged);
    // and a plain restore (the newest: the state just before) undoes that in turn
    const again = await deployment.roster(["worker", "restore", "elf"]);
    expect(again.code, again.stderr).toBe(0);
    const now = treeOf(store);
    expect(now["notes/n15.bin"]).toBe(good["notes/n15.bin"]);
    expect(now["notes/n5.bin"]).not.toBe(good["notes/n5.bin"]);
    expect((await list()).map((s) => s.reason)).toContain("before-restore");
  });

  it("refuses while a run of the worker is going, naming it, and while the store lock is held", async () => {
    const child = deployment.spawnRoster([
      "box",
      "exec",
      "elf",
      "--",
      "roster-lock store -- sleep 60",
    ]);
    try {
      const running = await waitFor(() =>
        listRuns(deployment.paths.state, "elf")
          .map((run) => readRecord(run.dir))
          .find((record) => record?.state === "running"),
      );
      const refused = await deployment.roster(["worker", "restore", "elf"]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(`elf has a run going: ${running.id} (exec)`);
      expect(refused.stderr).toContain("nothing was restored");
      // the box's `roster-lock store` is the very lock the host's pass takes
      const held = await waitFor(async () => {
        try {
          await takeSnapshot(
            deployment.paths,
            { worker: "elf" },
            { reason: "sweep", keep: 14, waitMs: 0 },
          );
          return undefined;
        } catch (error) {
          return String(error);
        }
      });
      expect(held).toMatch(/the store lock .*\.locks\/store is held/);
    } finally {
      await stop(child);
    }

    // a box inside `roster-lock store` whose runner is gone: only the lock says so
    const holder = spawn("flock", [join(store, ".locks/store"), "sleep", "60"], {
      stdio: "ignore",
    });
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      const before = treeOf(store);
      const refused = await deployment.roster(["worker", "restore", "elf"]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/the store lock .*\.locks\/store is held/);
      expect(treeOf(store)).toEqual(before);
    } finally {
      await stop(holder);
    }
  });
});

async function waitFor<T>(
  probe: () => T | undefined | Promise<T | undefined>,
  ms = 60_000,
): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error("timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
  });
}
