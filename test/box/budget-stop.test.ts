import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readTasks, type Task } from "../../runner/records/task-list/store.ts";
import { SessionError } from "../../runner/work/sessions/session.ts";
import { testDocker } from "../support/docker.ts";
import { ModelServer } from "../support/model-server.ts";
import { latestRecord, makeRosterRoot, type RosterRoot } from "../support/roster-root.ts";
import { termRouter } from "../support/term-router.ts";

const docker = await testDocker();

/**
 * A worker's model budget, end to end through a real box: the gateway meters
 * the usage the (scripted) provider reports, the call that crosses the cap
 * finishes, and what comes after is refused before it reaches the provider.
 * A one-shot run then records `ended_by: budget`, a chat sender is told why
 * and when it resets, and a queued task goes back to wait for the reset.
 */
describe.skipIf(!docker)("a run stopped by its model budget", () => {
  let model: ModelServer;
  let deployment: RosterRoot;

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), {
      modelKey: "BUDGET-KEY",
      extraOrg: `
[[budget.limit]]
currency = "tokens"
window = "day"
max = 40
`,
    });
  });
  afterAll(async () => {
    await model?.stop();
    await deployment?.cleanup();
  });

  it("lets the crossing call finish, then stops the next run at its first call: exit 2, ended_by budget", async () => {
    model.play({ text: "a long answer", usage: { prompt: 30, completion: 20 } });
    const first = await deployment.roster(["run", "elf", "spend it"]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain("a long answer");
    expect(latestRecord(deployment.paths, "elf")).toMatchObject({ ended_by: "exit" });

    const asked = model.requests.length;
    model.play({ text: "must never be sent" });
    const second = await deployment.roster(["run", "elf", "spend more"], { timeoutMs: 120_000 });
    expect(second.code, second.stderr).toBe(2);
    expect(second.stderr).toMatch(
      /the model budget is used up \(tokens over day cap \(50\.0000\/40\.0000\), refused at [^)]+\); it resets in \d+ (h|min|s)/,
    );
    // the refused calls never reached the provider
    expect(model.requests.length).toBe(asked);
    expect(latestRecord(deployment.paths, "elf")).toMatchObject({
      state: "failed",
      ended_by: "budget",
      error: expect.stringContaining("the model budget is used up"),
    });
    const shown = await deployment.roster([
      "runs",
      "show",
      latestRecord(deployment.paths, "elf")?.id ?? "",
    ]);
    expect(shown.stdout).toContain("(ended by budget)");
  });

  it("tells a chat sender the budget is used up and when it resets; the session lives on", async () => {
    const { router, send } = termRouter(deployment);
    try {
      const turn = send("term-budget-elf", "are you there?");
      await expect(turn).rejects.toBeInstanceOf(SessionError);
      await expect(turn).rejects.toThrow(
        /the worker stopped: the model budget is used up .*resets in/,
      );
      const [session] = await router.sessions();
      expect(session?.closing).toBe(false);
    } finally {
      await router.closeAll();
    }
  });

  it("puts a task stopped by the budget back in the queue, noting why", async () => {
    const added = await deployment.roster(["task", "add", "elf", "summarise the week", "--json"]);
    expect(added.code, added.stderr).toBe(0);
    const task = JSON.parse(added.stdout) as Task;
    const result = await deployment.roster(
      ["server", "start", "--once", "--no-listen", "--no-console"],
      {
        timeoutMs: 120_000,
      },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/requeued until its budget resets/);
    const settled = readTasks(deployment.paths, "elf").tasks.find((t) => t.id === task.id);
    expect(settled).toMatchObject({
      state: "pending",
      note: expect.stringMatching(/^requeued: the model budget is used up/),
    });
  });
});

/**
 * The other two kinds of cap, through real boxes: a cap in US dollars (the
 * gateway prices the usage the scripted provider reports with the org's
 * `[[budget.price]]`) and a cap in a worker.toml, which binds that worker and
 * no other.
 */
describe.skipIf(!docker)("a dollar cap and a per-worker cap", () => {
  let model: ModelServer;
  let deployment: RosterRoot;

  beforeAll(async () => {
    model = await new ModelServer().start("127.0.0.1");
    // one cent a token, so the org's $1 a day is 100 tokens
    deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), {
      modelKey: "USD-KEY",
      extraOrg: `
[[budget.price]]
model = "scripted-*"
input = 10000
output = 10000

[[budget.limit]]
currency = "usd"
window = "day"
max = 1.0
`,
    });
    // elf alone may spend 30 tokens a day; gnome has no cap of its own
    await writeFile(
      join(deployment.paths.config, "workers/elf/worker.toml"),
      'name = "elf"\n\n[[budget.limit]]\ncurrency = "tokens"\nwindow = "day"\nmax = 30\n',
    );
    await mkdir(join(deployment.paths.config, "workers/gnome"), { recursive: true });
    await writeFile(join(deployment.paths.config, "workers/gnome/worker.toml"), 'name = "gnome"\n');
  });
  afterAll(async () => {
    await model?.stop();
    await deployment?.cleanup();
  });

  const run = (worker: string, prompt: string) =>
    deployment.roster(["run", worker, prompt], { timeoutMs: 120_000 });

  it("stops one worker at its own cap while another goes on, then stops all at the dollar cap", async () => {
    // 40 tokens ($0.40): elf crosses its own 30-token cap, and that call finishes
    model.play({ text: "elf spent", usage: { prompt: 20, completion: 20 } });
    const elfFirst = await run("elf", "spend");
    expect(elfFirst.code, elfFirst.stderr).toBe(0);
    expect(elfFirst.stdout).toContain("elf spent");

    let asked = model.requests.length;
    model.play({ text: "elf must not get this" });
    const elfStopped = await run("elf", "spend more");
    expect(elfStopped.code, elfStopped.stderr).toBe(2);
    expect(elfStopped.stderr).toMatch(
      /the model budget is used up \(tokens over day cap \(40\.0000\/30\.0000\)/,
    );
    expect(model.requests.length).toBe(asked);
    model.reset();

    // elf's cap is not gnome's: 70 tokens ($0.70) go through and cross the org's $1
    model.play({ text: "gnome spent", usage: { prompt: 35, completion: 35 } });
    const gnomeFirst = await run("gnome", "spend");
    expect(gnomeFirst.code, gnomeFirst.stderr).toBe(0);
    expect(gnomeFirst.stdout).toContain("gnome spent");

    asked = model.requests.length;
    model.play({ text: "gnome must not get this" });
    const gnomeStopped = await run("gnome", "spend more");
    expect(gnomeStopped.code, gnomeStopped.stderr).toBe(2);
    expect(gnomeStopped.stderr).toMatch(
      /the model budget is used up \(usd over day cap \(1\.1000\/1\.0000\)/,
    );
    expect(model.requests.length).toBe(asked);
    expect(latestRecord(deployment.paths, "gnome")).toMatchObject({
      state: "failed",
      ended_by: "budget",
    });

    // what `roster budget` shows for gnome: the org's dollar cap, used up
    const shown = await deployment.roster(["budget", "--worker", "gnome", "--json"]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({
      scope: "org",
      currency: "usd",
      max: 1,
      used: expect.closeTo(1.1, 6),
      remaining: 0,
    });
  });
});
