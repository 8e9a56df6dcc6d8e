/**
 * One server per deployment, decided by a lock taken before crash recovery:
 * two `roster server start` at once leave one server and one refusal that
 * names it, and the refused one touches nothing (the winner's box lives on);
 * a lock left by a server that died (or from before a reboot) does not keep
 * the next one out.
 */
import { spawn } from "node:child_process";
import { existsSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readTasks } from "../../runner/records/task-list/store.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

const docker = await testDocker();

async function until(check: () => Promise<boolean> | boolean, what: string): Promise<void> {
  const deadline = Date.now() + 90_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A pid that belonged to a process that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  await new Promise((resolve) => child.once("exit", resolve));
  return child.pid ?? 999_999;
}

describe.skipIf(!docker)("roster server start: one per deployment", () => {
  let model: ModelServer;
  let deployment: RosterRoot;

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), { modelKey: "LOCK-KEY" });
  });
  afterAll(async () => {
    model?.reset();
    await model?.stop();
    await deployment?.cleanup();
  });

  const lockFile = () => join(deployment.paths.state, "server.lock");

  it("two starts raced: one serves, the other exits 2 naming it and kills nothing", async () => {
    // the task's box stays up on a model turn that takes minutes
    model.play({ text: "working on it", delayMs: 600_000 });
    const added = await deployment.roster(["task", "add", "elf", "a long job", "--json"]);
    expect(added.code, added.stderr).toBe(0);
    const taskId = (JSON.parse(added.stdout) as { id: string }).id;

    const starts = [0, 1].map(() => {
      const child = deployment.spawnRoster(["server", "start", "--no-console", "--no-listen"]);
      const started = { child, stderr: "", code: undefined as number | null | undefined };
      child.stderr.on("data", (chunk: Buffer) => {
        started.stderr += chunk.toString();
      });
      const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
      return { started, exited };
    });
    const first = await Promise.race(
      starts.map(({ started, exited }) => exited.then((code) => ({ started, code }))),
    );
    const winner = starts.find((s) => s.started !== first.started);
    if (!winner) throw new Error("no second start");
    try {
      expect(first.code, first.started.stderr).toBe(2);
      expect(first.started.stderr).toContain(
        `a server is already running for this deployment (pid ${winner.started.child.pid})`,
      );
      expect(first.started.stderr).not.toMatch(/reaped|gateway on/);

      // the winner runs the task in its box
      let runId = "";
      await until(async () => {
        const task = readTasks(deployment.paths, "elf").tasks.find((t) => t.id === taskId);
        runId = task?.run_id ?? "";
        if (task?.state !== "claimed" || !runId) return false;
        const boxes = await docker?.listContainers({ filters: { name: [`roster-box-${runId}`] } });
        return (boxes?.length ?? 0) === 1;
      }, "the winner's box").catch((error: unknown) => {
        throw new Error(`${String(error)}\nwinner's log:\n${winner.started.stderr}`);
      });

      // a start while that box runs is refused the same way, and the box lives on
      const late = await deployment.roster(["server", "start", "--once"]);
      expect(late.code, late.stderr).toBe(2);
      expect(late.stderr).toContain(`(pid ${winner.started.child.pid})`);
      expect(late.stderr).toContain("nothing was started or stopped");
      const boxes = await docker?.listContainers({ filters: { name: [`roster-box-${runId}`] } });
      expect(boxes?.map((b) => b.State)).toEqual(["running"]);
      expect(readTasks(deployment.paths, "elf").tasks.find((t) => t.id === taskId)).toMatchObject({
        state: "claimed",
        run_id: runId,
      });
    } finally {
      winner.started.child.kill("SIGTERM");
      expect(await winner.exited, winner.started.stderr).toBe(0);
    }
    expect(existsSync(lockFile())).toBe(false);
  });

  it("a lock left by a server that died does not keep the next one out", async () => {
    // a deployment of its own: the one above still has the long task queued
    const fresh = await makeRosterRoot(model.baseUrl("127.0.0.1"), { modelKey: "LOCK-KEY" });
    try {
      const lock = join(fresh.paths.state, "server.lock");
      writeFileSync(lock, String(await deadPid()));
      const result = await fresh.roster(["server", "start", "--once"]);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toContain("server stopped");
      expect(existsSync(lock)).toBe(false);
      // a lock from before the machine booted: its pid now names some other live process
      writeFileSync(lock, String(process.pid));
      utimesSync(lock, new Date("2001-01-01"), new Date("2001-01-01"));
      const rebooted = await fresh.roster(["server", "start", "--once"]);
      expect(rebooted.code, rebooted.stderr).toBe(0);
      expect(existsSync(lock)).toBe(false);
    } finally {
      await fresh.cleanup();
    }
  });
});
