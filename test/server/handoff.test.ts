import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { listRuns, readRecord, runDir } from "../../runner/records/run-records/run-record.ts";
import { readTasks } from "../../runner/records/task-list/store.ts";
import { until } from "../support/chat-turns.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer } from "../support/model-server.ts";
import { mainOf, sh } from "../support/repos.ts";
import { latestRecord, makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

/** A commit landed on a bare repo's main, as a push the desk approved would land it; its id. */
function landCommit(bare: string): string {
  const work = mkdtempSync(join(tmpdir(), "roster-land-"));
  try {
    sh(work, ["clone", "-q", bare, "."]);
    sh(work, ["commit", "-q", "--allow-empty", "-m", "landed between two runs"]);
    sh(work, ["push", "-q", "origin", "HEAD:main"]);
    return mainOf(bare);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * `roster run` and `roster box exec` with a server running: the server takes
 * the box (its gateway, its Docker connection), the command shows the same
 * answer and exits with the box's status; Ctrl-C on the command stops the run on the server; with no
 * server (or a dead one's socket left behind) the command runs the box itself.
 */
const docker = await testDocker();

describe.skipIf(!docker)("roster run handed to a running server", () => {
  let model: ModelServer;
  let deployment: RosterRoot;

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"));
  });
  beforeEach(() => {
    model.reset();
    model.requests.length = 0;
  });
  afterAll(async () => {
    await model?.stop();
    await deployment?.cleanup();
  });

  const latest = () => latestRecord(deployment.paths, "elf");

  it("runs in the server, answers the same, counts toward its cap, and Ctrl-C stops it there", async () => {
    const server = deployment.spawnRoster(["server", "start", "--no-listen", "--cap", "1"]);
    let serverLog = "";
    server.stderr.on("data", (chunk: Buffer) => {
      serverLog += chunk.toString();
    });
    try {
      await until(() => /gateway on/.test(serverLog), "the server to start");
      const socket = join(deployment.paths.state, "server.sock");
      await until(() => existsSync(socket), "the server to take runs", 10_000);

      model.play({ text: "handed over and answered" });
      const run = await deployment.roster(["run", "elf", "say something"]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toBe("handed over and answered\n");
      expect(run.stderr).toMatch(/run \S+: done \(exit, exit 0; run by the server\)/);
      // the server's process governed it, through the server's own gateway
      expect(latest()).toMatchObject({ state: "done", runner_pid: server.pid });

      // the server clones elf's knowledge repo for its next run ahead of it (spare-clones.ts)
      const spares = join(deployment.paths.state, "spare-clones");
      const knowledge = join(deployment.paths.data, "workers/elf/knowledge.git");
      const spareCount = () => (existsSync(spares) ? readdirSync(spares).length : 0);
      await until(() => spareCount() === 1, "a spare clone of elf's knowledge repo", 20_000);

      // --json streams pi's events through the server just the same
      model.play({ text: "as events" });
      const json = await deployment.roster(["run", "--json", "elf", "events please"]);
      expect(json.code, json.stderr).toBe(0);
      const events = json.stdout
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as { type: string });
      expect(events.at(-1)?.type).toBe("agent_settled");
      // it took the spare: its clone was made before it, at the branch as it is
      expect(latest()?.repos?.knowledge?.base_commit).toBe(mainOf(knowledge));
      await until(() => spareCount() === 1, "the next spare clone", 20_000);

      // a commit lands on the branch after the spare was made: the next run starts from it
      const landed = landCommit(knowledge);

      // handed over before the command tree loads (bin/roster.mjs): the public spelling and
      // a flag's = form mean what they mean to the tree, and its refusals are the tree's
      model.play({ text: "in two minutes" });
      const spelled = await deployment.roster(["worker", "run", "--ceiling=2", "elf", "quick"]);
      expect(spelled.code, spelled.stderr).toBe(0);
      expect(spelled.stdout).toBe("in two minutes\n");
      expect(latest()).toMatchObject({ ceiling_min: 2, runner_pid: server.pid });
      expect(latest()?.repos?.knowledge?.base_commit).toBe(landed);
      const empty = await deployment.roster(["run", "elf", " "]);
      expect(empty).toMatchObject({ code: 2, stderr: "roster: the prompt is empty\n" });
      const soon = await deployment.roster(["run", "--ceiling", "soon", "elf", "hi"]);
      expect(soon.code).toBe(2);
      expect(soon.stderr).toContain('--ceiling must be a positive number of minutes (got "soon")');

      // box exec goes the same way: the envelope is the command's, the box the server's
      const exec = await deployment.roster(["box", "exec", "elf", "--", "echo here; exit 3"]);
      expect(exec.code, exec.stderr).toBe(3);
      expect(JSON.parse(exec.stdout)).toMatchObject({
        status: "failed",
        exit_code: 3,
        stdout: "here\n",
      });
      // found by the id its envelope names: two runs in one second need not list newest first
      const execId = String(JSON.parse(exec.stdout).run_id);
      expect(readRecord(runDir(deployment.paths.state, "elf", execId))).toMatchObject({
        kind: "exec",
        state: "failed",
        runner_pid: server.pid,
      });
      const slow = await deployment.roster([
        "box",
        "exec",
        "elf",
        "--timeout",
        "1",
        "--",
        "sleep 60",
      ]);
      expect(slow.code, slow.stderr).toBe(124);
      expect(JSON.parse(slow.stdout)).toMatchObject({
        status: "timeout",
        exit_code: null,
        signal: "SIGKILL",
        reason: "timeout",
      });
      const unknown = await deployment.roster(["box", "exec", "nobody", "--", "true"]);
      expect(unknown.code).toBe(2);
      expect(JSON.parse(unknown.stdout)).toMatchObject({ status: "error", exit_code: null });
      expect(JSON.parse(unknown.stdout).error).toContain('no worker named "nobody"');

      // Ctrl-C on the command: the box is stopped on the server and the record says so
      model.play({ toolCalls: [{ name: "bash", arguments: { command: "sleep 300" } }] });
      const asked = model.requests.length;
      const child = deployment.spawnRoster(["run", "elf", "wait"]);
      await until(() => model.requests.length > asked, "the model to be asked", 60_000);
      // the handed run holds the server's only box (--cap 1): a due task waits for it
      const added = await deployment.roster(["task", "add", "elf", "count the apples", "--json"]);
      expect(added.code, added.stderr).toBe(0);
      const taskId = (JSON.parse(added.stdout) as { id: string }).id;
      const taskState = () =>
        readTasks(deployment.paths, "elf").tasks.find((task) => task.id === taskId)?.state;
      await new Promise((resolve) => setTimeout(resolve, 4500)); // past two dispatch ticks
      expect(taskState()).toBe("pending");

      // the task's turn is scripted before the box is freed: the dispatcher may start it at once
      model.play({ toolCalls: [{ name: "task_complete", arguments: { note: "12 apples" } }] });
      const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
      child.kill("SIGINT");
      expect(await exited).toBe(130);
      // found by what it is, not by being newest: the task's run may already have started
      const interrupted = () =>
        listRuns(deployment.paths.state, "elf")
          .map((run) => readRecord(run.dir))
          .find((record) => record?.kind === "box" && record.ended_by === "signal");
      await until(interrupted, "the handed run's record to be finished", 30_000);
      expect(interrupted()).toMatchObject({ state: "failed", runner_pid: server.pid });
      // the box is free again: the task runs now
      await until(() => taskState() === "done", "the task to run once the box was free", 60_000);
      // and once it has, no box of this deployment's runs is left: the task's record is
      // done when its run settled, its box's removal may still be on its way
      const client = docker as NonNullable<typeof docker>;
      const ours = new Set(listRuns(deployment.paths.state, "elf").map((run) => run.id));
      const left = async () =>
        (
          await client.listContainers({ all: true, filters: { label: ["roster.worker=elf"] } })
        ).filter((box) => ours.has(box.Labels["roster.run"] ?? ""));
      await until(
        async () => (await left()).length === 0,
        "every box of its runs to be gone",
        30_000,
      );
    } finally {
      const stopped = new Promise((resolve) => server.once("exit", resolve));
      server.kill("SIGTERM");
      await stopped;
    }
    expect(existsSync(join(deployment.paths.state, "server.sock"))).toBe(false);

    // no server: the command runs the box itself
    model.play({ text: "on my own" });
    const alone = await deployment.roster(["run", "elf", "and now?"]);
    expect(alone.code, alone.stderr).toBe(0);
    expect(alone.stdout).toBe("on my own\n");
    expect(alone.stderr).not.toContain("run by the server");
    const aloneId = /run (\S+): done/.exec(alone.stderr)?.[1] ?? "";
    const record = readRecord(runDir(deployment.paths.state, "elf", aloneId));
    expect(record?.state).toBe("done");
    expect(record?.runner_pid).not.toBe(server.pid);
  });
});
