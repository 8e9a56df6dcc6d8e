import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { readRecord, runDir } from "../../runner/records/run-records/run-record.ts";
import { readTasks, type Task } from "../../runner/records/task-list/store.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer, type RecordedRequest, type Turn, textOf } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

const docker = await testDocker();

/** The task text a model request is about (the first user message). */
const taskOf = (request: RecordedRequest) =>
  textOf(request.body.messages?.find((m) => m.role === "user")?.content);
const hasToolResult = (request: RecordedRequest) =>
  (request.body.messages ?? []).some((m) => m.role === "tool");
const complete = (note: string): Turn => ({
  toolCalls: [{ name: "task_complete", arguments: { note } }],
});

async function until(check: () => boolean, what: string, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function untilAsync(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe.skipIf(!docker)("roster server", () => {
  let model: ModelServer;
  let deployment: RosterRoot;

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), { modelKey: "SERVER-KEY" });
  });
  beforeEach(() => model.reset());
  afterAll(async () => {
    await model?.stop();
    await deployment?.cleanup();
  });

  const addTask = async (prompt: string): Promise<Task> => {
    const added = await deployment.roster(["task", "add", "elf", prompt, "--json"]);
    expect(added.code, added.stderr).toBe(0);
    return JSON.parse(added.stdout) as Task;
  };
  const taskNow = (id: string) => readTasks(deployment.paths, "elf").tasks.find((t) => t.id === id);

  it("--once runs a due task in a box and settles it from the run's own report", async () => {
    const task = await addTask("write the weekly summary");
    const later = await deployment.roster([
      "task",
      "add",
      "elf",
      "not yet",
      "--at",
      "2099-01-01T00:00:00Z",
      "--json",
    ]);
    model.play(complete("summary written"), { text: "Done." });
    const result = await deployment.roster(["server", "start", "--once"]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/task t-\w+ of elf: done/);

    const settled = taskNow(task.id);
    expect(settled).toMatchObject({ state: "done", note: "summary written" });
    const record = readRecord(runDir(deployment.paths.state, "elf", settled?.run_id ?? ""));
    expect(record).toMatchObject({ kind: "task", task_id: task.id, state: "done" });
    // the run knew it was a task run: the tool to report with was offered
    expect(model.requests.at(-2)?.body.tools?.map((t) => t.function.name)).toContain(
      "task_complete",
    );
    // the one not due yet is untouched
    expect(taskNow((JSON.parse(later.stdout) as Task).id)?.state).toBe("pending");
    // and the server is gone
    const status = await deployment.roster(["server", "status", "--json"]);
    expect(status.code).toBe(1);
    expect(JSON.parse(status.stdout)).toMatchObject({ running: false, queued: 1 });
  });

  it("reports its status while running and stops cleanly on SIGTERM", async () => {
    const server = deployment.spawnRoster(["server", "start"]);
    let stderr = "";
    server.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    await until(() => /gateway on/.test(stderr), "the server to start");
    const status = await deployment.roster(["server", "status", "--json"]);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({
      running: true,
      pid: server.pid,
      gateway: { port: deployment.gatewayPort, healthy: true },
    });
    // the version and commit it was started from, the same as this checkout's (roster -V)
    const { version } = JSON.parse(status.stdout) as { version: { server: string; here: string } };
    // (-V goes on to name the Node it runs on; the server's record is the version and commit)
    const here = (await deployment.roster(["-V"])).stdout.trim().split(" on Node ")[0] ?? "";
    expect(version).toEqual({ server: here, here });
    expect(version.server).toMatch(/^\d+\.\d+\.\d+ \([0-9a-f]{7,}(\+dirty)?\)$/);
    expect((await deployment.roster(["server", "status"])).stdout).toContain(`\nroster ${here}\n`);
    // a config whose [[test]] fails is refused: the door keeps the last good one, and says why
    const orgFile = join(deployment.paths.config, "org.toml");
    const org = readFileSync(orgFile, "utf8");
    const failing = `${org}\n[[test]]\nrequest = "GET https://nowhere.example/"\nworker = "elf"\nexpect = "deny"\n`;
    writeFileSync(orgFile, failing);
    let refused: { digest: string; problems: string[] } | undefined;
    await untilAsync(async () => {
      const asked = await deployment.roster(["server", "status", "--json"]);
      refused = (JSON.parse(asked.stdout) as { config?: { refused?: typeof refused } }).config
        ?.refused;
      return refused !== undefined;
    }, "the server's gateway to refuse the config");
    expect(refused?.problems).toEqual([
      expect.stringMatching(
        /org\.toml:\d+: test\.\d+: GET https:\/\/nowhere\.example\/ \(worker elf\): expected deny, the door would allow by rule "web-read"/,
      ),
    ]);
    const said = await deployment.roster(["server", "status"]);
    expect(said.stdout).toMatch(/config \w{12} REFUSED at .*\n {2}.*org\.toml:\d+: test\.\d+: GET/);
    await until(
      () => /config \w{12} refused, the door keeps judging by config/.test(stderr),
      "the log",
    );
    writeFileSync(orgFile, org);

    const again = await deployment.roster(["server", "start", "--once"]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(
      `a server is already running for this deployment (pid ${server.pid})`,
    );

    const exited = new Promise<number | null>((resolve) => server.once("exit", resolve));
    server.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(stderr).toContain("server stopped");
    expect(existsSync(join(deployment.paths.state, "server.json"))).toBe(false);
  });

  it("after a SIGKILL mid-task: orphans reaped, records finished as crash, nothing that reported done runs twice or counts as done", {
    tags: ["engine"],
  }, async () => {
    let restarted = false;
    const step = (request: RecordedRequest): Turn => {
      const task = taskOf(request);
      if (task.includes("alpha"))
        return hasToolResult(request)
          ? { text: "alpha is finished", delayMs: 120_000 }
          : complete("alpha done");
      if (restarted) return hasToolResult(request) ? { text: "beta ok" } : complete("beta done");
      return { text: "beta, slowly", delayMs: 120_000 };
    };
    model.play(...Array.from({ length: 12 }, () => step));
    const alpha = await addTask("alpha: report done, then keep talking");
    const beta = await addTask("beta: take a long time");

    const server = deployment.spawnRoster(["server", "start", "--cap", "2"]);
    let log = "";
    server.stderr.on("data", (chunk: Buffer) => {
      log += chunk.toString();
    });
    // alpha's box asks once more after its report (the tool's result), and is then held on
    // the model's slow answer: killed before that ask, its box made it to the model after the
    // count below was taken (seen under Podman), as if it had run again
    await until(() => {
      const a = taskNow(alpha.id);
      return (
        a?.state === "claimed" &&
        existsSync(join(runDir(deployment.paths.state, "elf", a.run_id ?? ""), "outcome.json")) &&
        model.requests.some((r) => taskOf(r).includes("alpha") && hasToolResult(r)) &&
        model.requests.some((r) => taskOf(r).includes("beta"))
      );
    }, "alpha to report and ask again, and beta to be under way").catch((error: unknown) => {
      throw new Error(`${String(error)}\nserver log:\n${log}`);
    });
    const alphaRun = taskNow(alpha.id)?.run_id ?? "";
    const betaRun = taskNow(beta.id)?.run_id ?? "";
    const exited = new Promise((resolve) => server.once("exit", resolve));
    server.kill("SIGKILL");
    await exited;
    // the boxes outlived their runner for now
    const orphans = await docker?.listContainers({
      filters: { name: [`roster-box-${alphaRun}`, `roster-box-${betaRun}`] },
    });
    expect(orphans?.length).toBe(2);
    const alphaAsked = model.requests.filter((r) => taskOf(r).includes("alpha")).length;

    restarted = true;
    const result = await deployment.roster(["server", "start", "--once", "--cap", "2"]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain("reaped 2 orphaned box(es)");
    for (const run of [alphaRun, betaRun]) {
      expect(readRecord(runDir(deployment.paths.state, "elf", run))).toMatchObject({
        state: "failed",
        ended_by: "crash",
      });
    }
    const left = await docker?.listContainers({
      all: true,
      filters: { name: [`roster-box-${alphaRun}`, `roster-box-${betaRun}`] },
    });
    expect(left).toHaveLength(0);
    // alpha had said it was done, but its run crashed: the host calls it failed, and it never runs again
    expect(taskNow(alpha.id)).toMatchObject({
      state: "failed",
      note: expect.stringMatching(
        /^failed: its runner died mid-run .* after reporting complete \("alpha done"\)$/,
      ),
      run_id: alphaRun,
    });
    expect(model.requests.filter((r) => taskOf(r).includes("alpha"))).toHaveLength(alphaAsked);
    // beta had not: requeued and run to the end in a new box
    const betaNow = taskNow(beta.id);
    expect(betaNow).toMatchObject({ state: "done", note: "beta done" });
    expect(betaNow?.run_id).not.toBe(betaRun);
  });

  it("files a heartbeat only where org.toml gives one, and not again before it is due", async () => {
    const beating = await makeRosterRoot(model.baseUrl("127.0.0.1"), {
      modelKey: "SERVER-KEY",
      extraOrg: '[[heartbeat]]\nworkers = ["elf"]\nevery = "1h"\nceiling_min = 5\n',
    });
    try {
      model.play(complete("nothing was due"), { text: "ok" });
      const first = await beating.roster(["server", "start", "--once"]);
      expect(first.code, first.stderr).toBe(0);
      expect(first.stderr).toContain("heartbeat filed for elf");
      const [beat, ...others] = readTasks(beating.paths, "elf").tasks;
      expect(others).toHaveLength(0);
      expect(beat).toMatchObject({
        filed_by: "heartbeat",
        ceiling_min: 5,
        state: "done",
        note: "nothing was due",
      });
      const second = await beating.roster(["server", "start", "--once"]);
      expect(second.code, second.stderr).toBe(0);
      expect(second.stderr).not.toContain("heartbeat filed");
      expect(readTasks(beating.paths, "elf").tasks).toHaveLength(1);
    } finally {
      await beating.cleanup();
    }
  });
});
