import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import type Docker from "dockerode";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { CONTAINER_LABELS } from "../../runner/boundary/box/layout.ts";
import { listRuns, readRecord } from "../../runner/records/run-records/run-record.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer, type ScriptStep } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

/**
 * No box outlives its gateway: when the gateway `roster run` depends on dies
 * mid-run (its embedded child, or a standalone one), the run kills its box at
 * once and fails with that cause.
 */
const docker = await testDocker();
const run = promisify(execFile);

const bash = (command: string): ScriptStep => ({
  toolCalls: [{ name: "bash", arguments: { command } }],
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Spawned = ReturnType<RosterRoot["spawnRoster"]>;

/** Collects a spawned command's output and how it ended. */
function watch(child: Spawned) {
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  child.stdout?.resume();
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  return { exited, stderr: () => stderr };
}

/**
 * The embedded gateway's pid: the child of this `roster run` whose command line
 * is `roster gateway start --embedded`. Read from the process table, so the
 * runner writes nothing extra for the test's sake.
 */
async function embeddedGatewayPid(rosterPid: number): Promise<number | undefined> {
  const { stdout } = await run("ps", ["--ppid", String(rosterPid), "-o", "pid=,args="]).catch(
    () => ({ stdout: "" }),
  );
  const line = stdout.split("\n").find((entry) => entry.includes("gateway start --embedded"));
  const pid = Number(line?.trim().split(/\s+/)[0]);
  return pid > 0 ? pid : undefined;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe.skipIf(!docker)("a box never outlives its gateway", () => {
  const client = docker as Docker;
  let model: ModelServer;
  let deployment: RosterRoot;

  /** Waits until the run's box is up and pi has asked the model once (the box is mid-run). */
  async function runningBox(asked: number): Promise<{ runId: string }> {
    for (let i = 0; i < 240; i++) {
      await sleep(500);
      const [latest] = listRuns(deployment.paths.state, "elf");
      const record = latest ? readRecord(latest.dir) : undefined;
      if (record?.state !== "running" || model.requests.length <= asked) continue;
      const boxes = await client.listContainers({
        filters: { label: [`${CONTAINER_LABELS.run}=${record.id}`] },
      });
      if (boxes.length) return { runId: record.id };
    }
    throw new Error("the box never came up");
  }

  async function boxesOf(runId: string) {
    return client.listContainers({
      all: true,
      filters: { label: [`${CONTAINER_LABELS.run}=${runId}`] },
    });
  }

  /** Exit 1 within 10 s of the gateway's death, one line naming it, the record failed with it, no box left. */
  async function expectFailedRun(
    output: ReturnType<typeof watch>,
    runId: string,
    killedAt: number,
    cause: string,
  ): Promise<void> {
    const code = await output.exited;
    expect(Date.now() - killedAt).toBeLessThan(10_000);
    expect(code, output.stderr()).toBe(1);
    expect(output.stderr()).toContain(`roster: ${cause}\n`);
    const [latest] = listRuns(deployment.paths.state, "elf");
    expect(latest?.id).toBe(runId);
    expect(latest ? readRecord(latest.dir) : undefined).toMatchObject({
      state: "failed",
      ended_by: "error",
      error: cause,
    });
    expect(await boxesOf(runId)).toHaveLength(0);
  }

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), { modelKey: "MODEL-KEY" });
  });
  beforeEach(() => model.reset());
  afterAll(async () => {
    await model?.stop();
    await deployment?.cleanup();
  });

  it("stops the box and fails the run when the embedded gateway is killed", async () => {
    model.play(bash("sleep 300"), { text: "never" });
    const asked = model.requests.length;
    const child = deployment.spawnRoster(["run", "elf", "hang around"]);
    const output = watch(child);
    try {
      const { runId } = await runningBox(asked);
      const gatewayPid = await embeddedGatewayPid(child.pid ?? 0);
      expect(gatewayPid, "the embedded gateway runs as a child of roster run").toBeDefined();
      process.kill(gatewayPid ?? 0, "SIGKILL");
      const killedAt = Date.now();

      await expectFailedRun(
        output,
        runId,
        killedAt,
        "the gateway died (signal SIGKILL) during the run; the box was stopped",
      );
    } finally {
      child.kill("SIGKILL");
    }
  });

  it("stops the box when a standalone gateway stops answering", async () => {
    const gateway = deployment.spawnRoster(["gateway", "start"]);
    const gatewayOutput = watch(gateway);
    const stateFile = join(deployment.paths.state, "gateway.json");
    for (let i = 0; i < 120 && !existsSync(stateFile); i++) await sleep(250);
    expect(existsSync(stateFile), gatewayOutput.stderr()).toBe(true);

    model.play(bash("sleep 300"), { text: "never" });
    const asked = model.requests.length;
    const child = deployment.spawnRoster(["run", "elf", "hang around"]);
    const output = watch(child);
    try {
      const { runId } = await runningBox(asked);
      // the run uses the standalone gateway: it embeds none of its own
      expect(await embeddedGatewayPid(child.pid ?? 0)).toBeUndefined();
      gateway.kill("SIGKILL");
      const killedAt = Date.now();

      await expectFailedRun(
        output,
        runId,
        killedAt,
        `the gateway on port ${deployment.gatewayPort} stopped answering /healthz during the run; the box was stopped`,
      );
    } finally {
      child.kill("SIGKILL");
      gateway.kill("SIGKILL");
      // a SIGKILLed gateway leaves its state behind; the next test embeds its own
      await rm(stateFile, { force: true });
    }
  });

  it("ends the embedded gateway with the run and records no gateway state", async () => {
    model.play(bash("sleep 4"), { text: "slept" });
    const child = deployment.spawnRoster(["run", "elf", "nap"]);
    const output = watch(child);
    let gatewayPid: number | undefined;
    for (let i = 0; i < 240 && !gatewayPid; i++) {
      await sleep(250);
      gatewayPid = await embeddedGatewayPid(child.pid ?? 0);
    }
    expect(gatewayPid).toBeDefined();
    const code = await output.exited;
    expect(code, output.stderr()).toBe(0);
    expect(alive(gatewayPid ?? 0)).toBe(false);
    expect(existsSync(join(deployment.paths.state, "gateway.json"))).toBe(false);
    const [latest] = listRuns(deployment.paths.state, "elf");
    expect(latest ? readRecord(latest.dir) : undefined).toMatchObject({
      state: "done",
      ended_by: "exit",
    });
  });

  it("stops the box first and then its gateway on SIGTERM", async () => {
    model.play(bash("sleep 300"), { text: "never" });
    const asked = model.requests.length;
    const child = deployment.spawnRoster(["run", "elf", "wait for a signal"]);
    const output = watch(child);
    const { runId } = await runningBox(asked);
    const gatewayPid = await embeddedGatewayPid(child.pid ?? 0);
    expect(gatewayPid).toBeDefined();
    child.kill("SIGTERM");
    expect(await output.exited).toBe(130);
    expect(alive(gatewayPid ?? 0)).toBe(false);
    expect(await boxesOf(runId)).toHaveLength(0);
    const [latest] = listRuns(deployment.paths.state, "elf");
    // the signal, not the gateway's stopping, is why the run ended
    expect(latest ? readRecord(latest.dir) : undefined).toMatchObject({
      state: "failed",
      ended_by: "signal",
    });
  });

  it("refuses legibly when the gateway's port is taken, starting nothing", async () => {
    // a foreign process that reads what it is sent and answers nothing (not a roster gateway)
    const squatter = createServer((socket) => socket.resume());
    await new Promise<void>((resolve) =>
      squatter.listen(deployment.gatewayPort, "127.0.0.1", resolve),
    );
    try {
      const runsBefore = listRuns(deployment.paths.state).length;
      const requests = model.requests.length;
      const result = await deployment.roster(["run", "elf", "anything"]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(
        `roster: the gateway is not healthy and could not be started on port ${deployment.gatewayPort}: listen EADDRINUSE`,
      );
      expect(listRuns(deployment.paths.state)).toHaveLength(runsBefore);
      expect(model.requests.length).toBe(requests);
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
  });
});
