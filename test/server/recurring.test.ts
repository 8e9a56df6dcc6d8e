import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { listRuns, runDir } from "../../runner/records/run-records/run-record.ts";
import { readTasks, type Task } from "../../runner/records/task-list/store.ts";
import { Dispatcher } from "../../runner/services/server/dispatch.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer, type Turn } from "../support/model-server.ts";
import { makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";

/**
 * Recurring templates through the server's own dispatcher, its clock moved by
 * the test instead of waited for; each fire's task runs in a real box. A new
 * Dispatcher over the same deployment is the server after a restart: all it
 * knows is what the task list holds.
 */
const docker = await testDocker();

const complete = (note: string): Turn => ({
  toolCalls: [{ name: "task_complete", arguments: { note } }],
});
const DAY = 86_400_000;

describe.skipIf(!docker)("recurring tasks in the server", () => {
  let model: ModelServer;
  let deployment: RosterRoot;

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), {
      modelKey: "SERVER-KEY",
      extraOrg:
        '[schedule]\ntimezone = "UTC"\n\n[[action]]\nname = "set-tasks"\nexecutor = "task-list"\ntrust = "auto"\n',
    });
  });
  beforeEach(() => model.reset());
  afterAll(async () => {
    await model?.stop();
    await deployment?.cleanup();
  });

  const fired = (): Task[] =>
    readTasks(deployment.paths, "elf").tasks.filter((task) => task.template_id !== undefined);
  const serverAt = (at: () => Date) =>
    new Dispatcher({
      paths: deployment.paths,
      cap: 2,
      note: () => undefined,
      env: { ...process.env, ROSTER_ROOT: deployment.root },
      clock: at,
    });

  it("fires on its cron, keeps its cursor across a restart, and catches up once after downtime", async () => {
    const added = await deployment.roster([
      "task",
      "add",
      "elf",
      "--cron",
      "0 9 * * *",
      "--json",
      "daily digest",
    ]);
    expect(added.code, added.stderr).toBe(0);
    const template = JSON.parse(added.stdout) as { id: string; next_at: string };
    const first = Date.parse(template.next_at);
    expect(new Date(first).toISOString()).toMatch(/T09:00:00.000Z$/);
    let now = new Date(first - 60_000);
    const server = serverAt(() => now);

    // a minute early: nothing
    expect(await server.tick()).toBe(0);
    expect(fired()).toHaveLength(0);
    // its time: one task, run in a box and settled from its report
    model.play(complete("digest 1"), { text: "ok" });
    now = new Date(first + 5_000);
    expect(await server.tick()).toBe(1);
    await server.drain();
    expect(fired()).toMatchObject([{ state: "done", note: "digest 1", template_id: template.id }]);
    // later the same minute: the cursor has moved on, nothing fires again
    now = new Date(first + 30_000);
    expect(await server.tick()).toBe(0);
    await server.stop();

    // a restart: the cursor is on the list, so the next day fires once, not twice
    model.play(complete("digest 2"), { text: "ok" });
    now = new Date(first + DAY + 5_000);
    const restarted = serverAt(() => now);
    expect(await restarted.tick()).toBe(1);
    await restarted.drain();
    expect(await restarted.tick()).toBe(0);
    await restarted.stop();
    expect(fired().map((task) => task.note)).toEqual(["digest 1", "digest 2"]);

    // down across three fire times (days 2, 3 and 4): one catch-up run, saying so
    model.play(complete("caught up"), { text: "ok" });
    now = new Date(first + 4 * DAY + 3 * 3_600_000);
    const back = serverAt(() => now);
    expect(await back.tick()).toBe(1);
    await back.drain();
    expect(await back.tick()).toBe(0);
    const catchUp = fired().at(-1);
    expect(fired()).toHaveLength(3);
    expect(catchUp).toMatchObject({ state: "done", note: "caught up" });
    expect(catchUp?.catch_up).toMatch(/^due at .*T09:00:00.000Z \(and 2 more fires since\)/);
    // what the worker was told says it is late
    expect(JSON.stringify(model.requests.at(-2)?.body.messages)).toContain("catch-up");

    // and the schedule goes on: the next day's fire is an ordinary one
    model.play(complete("digest 5"), { text: "ok" });
    now = new Date(first + 5 * DAY + 5_000);
    expect(await back.tick()).toBe(1);
    await back.drain();
    await back.stop();
    expect(fired().at(-1)).toMatchObject({ state: "done", note: "digest 5" });
    expect(fired().at(-1)?.catch_up).toBeUndefined();
    const cursor = readTasks(deployment.paths, "elf").recurring?.find(
      (one) => one.id === template.id,
    );
    expect(cursor?.next_at).toBe(new Date(first + 6 * DAY).toISOString());
  });

  it("runs a depends_on chain in order; a failed middle task blocks the last with the reason", async () => {
    const add = async (args: string[]) => {
      const added = await deployment.roster(["task", "add", "elf", "--json", ...args]);
      expect(added.code, added.stderr).toBe(0);
      return (JSON.parse(added.stdout) as Task).id;
    };
    const fetch = await add(["fetch the numbers"]);
    const crunch = await add(["--after", fetch, "crunch them"]);
    const report = await add(["--after", crunch, "write the report"]);
    const state = (id: string) => readTasks(deployment.paths, "elf").tasks.find((t) => t.id === id);
    const once = async () => {
      const result = await deployment.roster(["server", "start", "--once"]);
      expect(result.code, result.stderr).toBe(0);
    };

    // first pass: only the head of the chain runs
    model.play(complete("numbers fetched"), { text: "ok" });
    await once();
    expect(state(fetch)).toMatchObject({ state: "done" });
    expect(state(crunch)?.state).toBe("pending");
    expect(state(report)).toMatchObject({
      state: "pending",
      note: `waiting for ${crunch} (pending)`,
    });

    // second pass: the middle one fails
    model.play(
      { toolCalls: [{ name: "task_fail", arguments: { note: "the numbers are garbled" } }] },
      { text: "sorry" },
    );
    await once();
    expect(state(crunch)).toMatchObject({ state: "failed", note: "the numbers are garbled" });

    // third pass: the last never runs; it is blocked, saying by what
    const asked = model.requests.length;
    await once();
    expect(model.requests.length).toBe(asked);
    expect(state(report)).toMatchObject({
      state: "blocked",
      note: `blocked: ${crunch} failed (the numbers are garbled)`,
    });
  });

  it("a worker files its own template with set_tasks from its box, and sees it in schedule.json", async () => {
    const asks = await deployment.roster(["task", "add", "elf", "--json", "set up your mornings"]);
    const ask = (JSON.parse(asks.stdout) as Task).id;
    // the worker reads ~/self/schedule.json for the version, as the tool tells it to
    const seen = () => {
      const newest = listRuns(deployment.paths.state, "elf")[0];
      return JSON.parse(readFileSync(join(newest?.dir ?? "", "self/schedule.json"), "utf8")) as {
        version: number;
        tasks: Array<{ id: string; prompt: string }>;
      };
    };
    model.play(
      () => {
        const view = seen();
        return {
          toolCalls: [
            {
              name: "set_tasks",
              arguments: {
                base_version: view.version,
                tasks: view.tasks.map((t) => ({ id: t.id, prompt: t.prompt })),
                recurring: [
                  {
                    prompt: "read the overnight alerts",
                    cron: "0 7 * * 1-5",
                    window: "07:00-09:00",
                  },
                ],
              },
            },
          ],
        };
      },
      complete("mornings set up"),
      { text: "ok" },
    );
    const once = await deployment.roster(["server", "start", "--once"]);
    expect(once.code, once.stderr).toBe(0);
    const task = readTasks(deployment.paths, "elf").tasks.find((t) => t.id === ask);
    expect(task).toMatchObject({ state: "done", note: "mornings set up" });
    const mine = readTasks(deployment.paths, "elf").recurring?.find(
      (one) => one.prompt === "read the overnight alerts",
    );
    expect(mine).toMatchObject({
      cron: "0 7 * * 1-5",
      window: "07:00-09:00",
      filed_by: `run:${task?.run_id}`,
      standing: "proactive",
    });
    expect(mine?.next_at).toMatch(/T07:00:00.000Z$/);
    // the run's own view was rewritten in place: the template, with its next fire
    const view = JSON.parse(
      readFileSync(
        join(runDir(deployment.paths.state, "elf", task?.run_id ?? ""), "self/schedule.json"),
        "utf8",
      ),
    ) as { recurring: Array<{ id: string; next_fire: string }> };
    expect(view.recurring).toContainEqual(
      expect.objectContaining({ id: mine?.id, next_fire: mine?.next_at }),
    );
  });
});
