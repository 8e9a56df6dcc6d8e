import { execFileSync, spawn } from "node:child_process";
import { existsSync, openSync, readdirSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listRuns, readRecord } from "../../runner/records/run-records/run-record.ts";
import { bridgeGateway, hostBridgeAddress, testDocker } from "../support/docker.ts";
import { ModelServer } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

/**
 * Faults: parts of the host failing under a run. (The gateway dying mid-run
 * and the runner being killed mid-run are in test/box/gateway-death.test.ts
 * and test/box/run.test.ts; an executor down when its gate is approved, which
 * needs no box, in test/actions/executor-down.test.ts.)
 */
const docker = await testDocker();

describe.skipIf(!docker)("a full disk under the state root", () => {
  let model: ModelServer;
  let deployment: RosterRoot;
  let mounted = false;

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), { modelKey: "DISK-KEY" });
    // a small filesystem of its own for the state root (root only, as CI runs)
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=8m", "tmpfs", deployment.paths.state]);
    mounted = true;
  });
  afterAll(async () => {
    if (mounted) execFileSync("umount", ["-l", deployment.paths.state]);
    await model?.stop();
    await deployment?.cleanup();
  });

  it("fails the run with a clear error, leaves no half-written record, and works once there is room", async () => {
    const { state } = deployment.paths;
    // fill it to the last byte
    try {
      execFileSync("dd", ["if=/dev/zero", `of=${join(state, "filler")}`, "bs=64k"], {
        stdio: "ignore",
      });
    } catch {
      // dd stops at "No space left on device", which is the point
    }
    model.play({ text: "never asked" });
    const full = await deployment.roster(["run", "elf", "write something"]);
    expect(full.code).not.toBe(0);
    // the first thing a run writes is its record: that is the write the full disk refused
    const refused =
      /^roster: could not write the run record (.+)\/run\.json: ENOSPC: no space left on device/.exec(
        full.stderr.trim().split("\n").at(-1) ?? "",
      );
    expect(refused, full.stderr).not.toBeNull();
    expect(full.stderr).not.toMatch(/\n\s+at /); // a message, not a stack trace
    // the record it was about to write: its folder is there and holds nothing, neither half a
    // record nor the temporary it is written to before the rename; so there is no run to list
    const failed = refused?.[1] ?? "";
    expect(dirname(failed)).toBe(join(state, "runs/elf"));
    expect(readdirSync(failed)).toEqual([]);
    expect(listRuns(state, "elf")).toEqual([]);
    expect(model.requests).toHaveLength(0);

    await rm(join(state, "filler"));
    model.reset();
    model.play({ text: "room again" });
    const again = await deployment.roster(["run", "elf", "write something"]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain("room again");
    // the run with room is the one record there, whole
    const runs = listRuns(state, "elf");
    expect(runs.map((run) => readRecord(run.dir)?.state)).toEqual(["done"]);
  });
});

/**
 * Stops the running dockerd and starts a new one the way box/with-docker.sh
 * does; resolves once the engine answers AND its default bridge is back with
 * the gateway it had, so the suites after this one find Docker as it was (a
 * bridge still coming up left the escape suite aiming at an empty address).
 */
async function restartDockerd(): Promise<void> {
  const bridge = hostBridgeAddress();
  const pids = execFileSync("pidof", ["dockerd"], { encoding: "utf8" }).trim().split(/\s+/);
  for (const pid of pids) process.kill(Number(pid), "SIGTERM");
  const gone = (pid: string) => !existsSync(`/proc/${pid}`);
  for (let i = 0; i < 300 && !pids.every(gone); i++)
    await new Promise((resolve) => setTimeout(resolve, 100));
  expect(pids.every(gone)).toBe(true);
  const log = openSync(join(tmpdir(), `roster-dockerd-${process.pid}.log`), "a");
  spawn("dockerd", [], { detached: true, stdio: ["ignore", log, log] }).unref();
  let answers = false;
  for (let i = 0; i < 120; i++) {
    try {
      execFileSync("docker", ["info"], { stdio: "ignore" });
      answers = true;
    } catch {
      answers = false;
    }
    if (answers && bridgeGateway() === bridge) return;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(
    answers
      ? `dockerd came back, but its default bridge has not its gateway ${bridge} again within 60 s (now: ${bridgeGateway() ?? "none"})`
      : "dockerd did not come back within 60 s",
  );
}

describe.skipIf(!docker)("the Docker engine restarted between runs", () => {
  let model: ModelServer;
  let deployment: RosterRoot;

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), { modelKey: "RESTART-KEY" });
  });
  afterAll(async () => {
    await model?.stop();
    await deployment?.cleanup();
  });

  it("the next run works: its box starts and reaches the model through its door", async () => {
    model.play({ text: "before the restart" });
    const before = await deployment.roster(["run", "elf", "hello"]);
    expect(before.code, before.stderr).toBe(0);

    await restartDockerd();

    // the box reaches the model only through the gateway's door, so an answer means both came
    // back (that the box is still locked in is the escape suite's: test/security/escape.test.ts)
    model.play({ text: "after the restart" });
    const after = await deployment.roster(["run", "elf", "hello again"], { timeoutMs: 120_000 });
    expect(after.code, after.stderr).toBe(0);
    expect(after.stdout.trim()).toBe("after the restart");
  }, 180_000);
});
