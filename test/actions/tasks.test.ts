import { readFileSync, statSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { userInfo } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../runner/ground/config/load.ts";
import { readJournal } from "../../runner/records/journal/journal.ts";
import { readTasks, updateList, updateTasks } from "../../runner/records/task-list/store.ts";
import { denyGate } from "../../runner/services/actions/desk.ts";
import { MAX_UNSETTLED_TASKS } from "../../runner/services/actions/executors/tasks.ts";
import { findGate } from "../../runner/services/actions/gates.ts";
import { readyTasks } from "../../runner/services/server/ready-tasks.ts";
import { submitAction } from "../support/action-host.ts";
import { runRoster } from "../support/cli.ts";
import { type GatewayEnv, startGatewayEnv } from "../support/gateway-env.ts";

/** file_task and set_tasks: a worker's own list, versioned, changed only against what it read. */
let env: GatewayEnv;

const submit = (token: string, envelope: unknown) => submitAction(env, token, envelope);
const cli = (args: string[]) => runRoster(args, { ROSTER_ROOT: env.root });

beforeAll(async () => {
  env = await startGatewayEnv(
    '[[action]]\nname = "file-task"\nexecutor = "task"\ntrust = "auto"\n\n[[action]]\nname = "set-tasks"\nexecutor = "task-list"\ntrust = "auto"\n\n[[action]]\nname = "ask-lead"\nexecutor = "message-user"\nwake_on_resolve = true\n',
  );
  await mkdir(join(env.paths.config, "workers/elf"), { recursive: true });
  await writeFile(join(env.paths.config, "workers/elf/worker.toml"), 'name = "elf"\n');
  await new Promise((resolve) => setTimeout(resolve, 600));
});
afterAll(async () => {
  await env?.cleanup();
});

describe("tasks", () => {
  it("file_task adds a task and rewrites the proposing run's schedule.json in place", async () => {
    const view = join(env.paths.state, "runs/elf/run-t1/self/schedule.json");
    await mkdir(join(view, ".."), { recursive: true });
    await writeFile(view, "{}\n");
    const inode = statSync(view).ino;
    const token = await env.token("elf", "run-t1");
    const reply = await submit(token, {
      intent: "file-task",
      payload: {
        prompt: "Summarise the week's tickets",
        ceiling_min: 15,
        at: "2026-12-01T09:00:00Z",
      },
    });
    expect(reply.status).toBe(200);
    const result = reply.body.result as { task_id: string; state: string; version: number };
    expect(result).toMatchObject({ state: "pending", version: 1 });
    expect(statSync(view).ino).toBe(inode);
    const seen = JSON.parse(readFileSync(view, "utf8")) as {
      version: number;
      tasks: Array<{ id: string }>;
    };
    expect(seen.version).toBe(1);
    expect(seen.tasks.map((task) => task.id)).toEqual([result.task_id]);

    const listed = await cli(["task", "ls", "elf"]);
    expect(listed.stdout).toMatch(
      new RegExp(`${result.task_id}\\s+pending\\s+elf .*Summarise the week's tickets`),
    );
    const shown = await cli(["task", "show", result.task_id.slice(2, 6)]);
    expect(shown.stdout).toContain("filed     ");
    expect(shown.stdout).toContain("by run:run-t1");
    expect(shown.stdout).toContain("ceiling   15 min, not before 2026-12-01T09:00:00Z");
  });

  it("refuses a time that is not RFC 3339 UTC, naming the field", async () => {
    const token = await env.token("elf");
    const reply = await submit(token, {
      intent: "file-task",
      payload: { prompt: "x", at: "tomorrow 9am" },
    });
    expect(reply.status).toBe(400);
    expect(String(reply.body.error)).toMatch(/^bad envelope: payload\.at: /);
  });

  it("set_tasks replaces pending tasks against the version it read; stale or foreign edits are refused", async () => {
    const token = await env.token("elf");
    // a task the dispatcher has claimed: not the worker's to change
    const claimed = await updateTasks(env.paths, "elf", (current) => [
      ...current.tasks,
      {
        id: "t-0000c1a1",
        prompt: "running now",
        ceiling_min: 30,
        state: "claimed",
        filed_at: new Date().toISOString(),
        filed_by: "cli:test",
      },
    ]);
    const stale = await submit(token, {
      intent: "set-tasks",
      payload: { base_version: claimed.version - 1, tasks: [] },
    });
    expect(stale.status).toBe(409);
    expect(String(stale.body.error)).toMatch(
      /^payload\.base_version: the task list is at version \d+ now/,
    );

    const foreign = await submit(token, {
      intent: "set-tasks",
      payload: { base_version: claimed.version, tasks: [{ id: "t-0000c1a1", prompt: "changed" }] },
    });
    expect(foreign.status).toBe(502);
    expect(String(foreign.body.error)).toContain("t-0000c1a1 is claimed: not yours to change");
    expect(readTasks(env.paths, "elf").version).toBe(claimed.version);

    const replaced = await submit(token, {
      intent: "set-tasks",
      payload: { base_version: claimed.version, tasks: [{ prompt: "only this one" }] },
    });
    expect(replaced).toEqual({
      status: 200,
      body: { status: "done", result: { status: "ok", version: claimed.version + 1 } },
    });
    const after = readTasks(env.paths, "elf").tasks;
    expect(after.filter((task) => task.state === "pending").map((task) => task.prompt)).toEqual([
      "only this one",
    ]);
    expect(after.find((task) => task.id === "t-0000c1a1")?.prompt).toBe("running now");
  });

  it("wake_on_resolve: a decided gate files a short continuation task and journals it", async () => {
    const token = await env.token("elf", "run-wake");
    const reply = await submit(token, {
      intent: "ask-lead",
      payload: { text: "may I delete the old logs?" },
    });
    expect(reply.status).toBe(202);
    const gate = findGate(env.paths, String(reply.body.gate_id));
    await denyGate(env.paths, gate, { by: "test", note: "keep them a month" });
    const continuation = readTasks(env.paths, "elf").tasks.at(-1);
    expect(continuation).toMatchObject({
      state: "pending",
      ceiling_min: 15,
      filed_by: `gate:${gate.id}`,
    });
    expect(continuation?.prompt).toContain(
      `Your proposal ${gate.id} (ask-lead) was denied: keep them a month.`,
    );
    expect(readJournal(env.paths, "elf").at(-1)).toMatchObject({
      kind: "continuation-filed",
      gate_id: gate.id,
      detail: { task_id: continuation?.id },
    });
  });

  it("roster task add checks its input and the worker", async () => {
    const added = await cli(["task", "add", "elf", "--ceiling", "10", "Tidy", "the", "store"]);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toMatch(/^t-[0-9a-f]{8} pending for elf \(list version \d+\)/);
    expect(readTasks(env.paths, "elf").tasks.at(-1)).toMatchObject({
      prompt: "Tidy the store",
      ceiling_min: 10,
    });
    expect((await cli(["task", "add", "nobody", "x"])).code).toBe(2);
    const badAt = await cli(["task", "add", "elf", "--at", "noon", "x"]);
    expect(badAt.code).toBe(2);
    expect(badAt.stderr).toContain("--at noon: an RFC 3339 time in UTC");
  });

  it("set_tasks keeps recurring templates under the same version check; the heartbeat is the host's", async () => {
    const token = await env.token("elf", "run-rec");
    // the host's heartbeat is on the list already, as the server puts it there
    const before = await updateList(env.paths, "elf", (current) => ({
      tasks: current.tasks,
      recurring: [
        {
          id: "r-heartbeat",
          prompt: "beat",
          every: "30m",
          ceiling_min: 10,
          filed_at: new Date().toISOString(),
          filed_by: "heartbeat",
          standing: "proactive",
          system: true,
          next_at: "2099-01-01T00:00:00.000Z",
        },
      ],
    }));
    const pending = before.tasks.filter((task) => task.state === "pending");
    const keep = pending.map((task) => ({ id: task.id, prompt: task.prompt }));
    const made = await submit(token, {
      intent: "set-tasks",
      payload: {
        base_version: before.version,
        tasks: keep,
        recurring: [{ prompt: "morning digest", cron: "30 7 * * 1-5", window: "07:00-10:00" }],
      },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const list = readTasks(env.paths, "elf");
    expect(list.recurring?.map((one) => one.id)[0]).toBe("r-heartbeat");
    const digest = list.recurring?.find((one) => one.prompt === "morning digest");
    expect(digest).toMatchObject({
      cron: "30 7 * * 1-5",
      window: "07:00-10:00",
      ceiling_min: 20,
      standing: "proactive",
      filed_by: "run:run-rec",
    });
    expect(Date.parse(digest?.next_at ?? "")).toBeGreaterThan(Date.now());

    // stale: refused, nothing changed
    const stale = await submit(token, {
      intent: "set-tasks",
      payload: { base_version: before.version, tasks: keep, recurring: [] },
    });
    expect(stale.status).toBe(409);
    expect(readTasks(env.paths, "elf").recurring).toHaveLength(2);

    // the heartbeat can't be changed …
    const beat = await submit(token, {
      intent: "set-tasks",
      payload: {
        base_version: list.version,
        tasks: keep,
        recurring: [{ id: "r-heartbeat", prompt: "never mind", every: "1d" }],
      },
    });
    expect(beat.status).toBe(409);
    expect(String(beat.body.error)).toMatch(/r-heartbeat is the host's heartbeat/);
    // … nor removed: leaving every template out retires the worker's own, never the host's
    const retired = await submit(token, {
      intent: "set-tasks",
      payload: { base_version: list.version, tasks: keep, recurring: [] },
    });
    expect(retired.status).toBe(200);
    expect(readTasks(env.paths, "elf").recurring?.map((one) => one.id)).toEqual(["r-heartbeat"]);

    // a bad cron expression is refused with its field
    const bad = await submit(token, {
      intent: "set-tasks",
      payload: {
        base_version: readTasks(env.paths, "elf").version,
        tasks: keep,
        recurring: [{ prompt: "x", cron: "every morning" }],
      },
    });
    expect(bad.status).toBe(409);
    expect(String(bad.body.error)).toMatch(
      /^payload\.recurring\.0\.cron: "every morning" has 2 fields/,
    );
  });

  it("depends_on: unknown ids and cycles are refused when filed, naming the ids", async () => {
    const token = await env.token("elf", "run-deps");
    const first = await submit(token, { intent: "file-task", payload: { prompt: "fetch" } });
    const a = String((first.body.result as { task_id: string }).task_id);
    const unknown = await submit(token, {
      intent: "file-task",
      payload: { prompt: "report", depends_on: ["t-99999999"] },
    });
    expect(unknown.status).toBe(409);
    expect(String(unknown.body.error)).toBe(
      "payload.depends_on: t-99999999 is not on your task list",
    );
    const second = await submit(token, {
      intent: "file-task",
      payload: { prompt: "report", depends_on: [a] },
    });
    const b = String((second.body.result as { task_id: string }).task_id);
    expect(readTasks(env.paths, "elf").tasks.find((task) => task.id === b)?.depends_on).toEqual([
      a,
    ]);
    const list = readTasks(env.paths, "elf");
    const pending = list.tasks.filter((task) => task.state === "pending");
    const cyclic = await submit(token, {
      intent: "set-tasks",
      payload: {
        base_version: list.version,
        tasks: pending.map((task) => ({
          id: task.id,
          prompt: task.prompt,
          ...(task.id === a ? { depends_on: [b] } : task.id === b ? { depends_on: [a] } : {}),
        })),
      },
    });
    expect(cyclic.status).toBe(502);
    expect(String(cyclic.body.error)).toMatch(
      new RegExp(
        `depends_on makes a cycle: (${a} → ${b} → ${a}|${b} → ${a} → ${b}); nothing was changed`,
      ),
    );
    expect(readTasks(env.paths, "elf").version).toBe(list.version);
  });

  it("roster task add --cron files a template; ls shows its next fire; rm retires it", async () => {
    const added = await cli([
      "task",
      "add",
      "elf",
      "--cron",
      "0 9 * * 1-5",
      "--window",
      "09:00-17:00",
      "Weekly",
      "review",
    ]);
    expect(added.code, added.stderr).toBe(0);
    const id = /^(r-[0-9a-f]{8}) for elf: cron "0 9 \* \* 1-5" within 09:00-17:00, next (\S+)/.exec(
      added.stdout,
    );
    expect(id, added.stdout).not.toBeNull();
    const listed = await cli(["task", "ls", "elf"]);
    expect(listed.stdout).toMatch(
      new RegExp(
        `recurring:[\\s\\S]*${id?.[1]}\\s+elf\\s+next \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC`,
      ),
    );
    expect(readTasks(env.paths, "elf").recurring?.find((one) => one.id === id?.[1])).toMatchObject({
      standing: "owner",
      ceiling_min: 20,
    });
    const bad = await cli(["task", "add", "elf", "--cron", "0 9 * *", "x"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--cron: "0 9 \* \*" has 4 fields; a cron expression has 5/);
    const badWindow = await cli(["task", "add", "elf", "--every", "1h", "--window", "9-5", "x"]);
    expect(badWindow.stderr).toMatch(/--window: "9-5" is not a window like "09:00-17:00"/);
    const beat = await cli(["task", "rm", "r-heartbeat"]);
    expect(beat.code).toBe(2);
    expect(beat.stderr).toMatch(/heartbeat: switch it off in its worker.toml/);
    const removed = await cli(["task", "rm", id?.[1] ?? "?"]);
    expect(removed.code, removed.stderr).toBe(0);
    expect(readTasks(env.paths, "elf").recurring?.some((one) => one.id === id?.[1])).toBe(false);
  });

  it("roster task rm cancels a waiting task, which blocks what depends on it; requeue puts it back", async () => {
    const first = await cli([
      "task",
      "add",
      "elf",
      "--at",
      "2099-01-01T00:00:00Z",
      "--json",
      "later",
    ]);
    const a = (JSON.parse(first.stdout) as { id: string }).id;
    const second = await cli(["task", "add", "elf", "--after", a, "--json", "after it"]);
    expect(second.code, second.stderr).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({ depends_on: [a], standing: "owner" });
    const cancelled = await cli(["task", "rm", a]);
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(readTasks(env.paths, "elf").tasks.find((task) => task.id === a)).toMatchObject({
      state: "cancelled",
    });
    // the dispatcher's next look blocks what waited on it, saying why; it never runs
    const b = (JSON.parse(second.stdout) as { id: string }).id;
    const config = loadConfig(env.paths.config, { vaultDir: env.paths.vault });
    const ready = await readyTasks(env.paths, config, new Date());
    expect(ready.map((one) => one.task.id)).not.toContain(b);
    expect(readTasks(env.paths, "elf").tasks.find((task) => task.id === b)).toMatchObject({
      state: "blocked",
      note: `blocked: ${a} cancelled (cancelled by cli:${process.env.USER ?? userInfo().username})`,
    });
    const shown = await cli(["task", "ls", "elf"]);
    expect(shown.stdout).toMatch(new RegExp(`${b}\\s+blocked .*\\[blocked: ${a} cancelled`));
    const requeued = await cli(["task", "requeue", a]);
    expect(requeued.code, requeued.stderr).toBe(0);
    expect(readTasks(env.paths, "elf").tasks.find((task) => task.id === a)?.state).toBe("pending");
    const again = await cli(["task", "requeue", a]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("is pending already");
  });
  it("file_task refuses past the unsettled tasks one worker may have, naming the bound, and files again once some settle", async () => {
    const token = await env.token("elf", "run-loop");
    const unsettled = () =>
      readTasks(env.paths, "elf").tasks.filter(
        (task) => !["done", "failed", "cancelled", "blocked"].includes(task.state),
      );
    const filler = MAX_UNSETTLED_TASKS - unsettled().length;
    await updateTasks(env.paths, "elf", (current) => [
      ...current.tasks,
      ...Array.from({ length: filler }, (_, i) => ({
        id: `t-${(0xa0000000 + i).toString(16)}`,
        prompt: `filed in a loop ${i}`,
        ceiling_min: 5,
        state: "pending" as const,
        filed_at: new Date().toISOString(),
        filed_by: "run:run-loop",
      })),
    ]);
    const file = () =>
      submit(token, { intent: "file-task", payload: { prompt: "one more, again" } });
    const refused = await file();
    expect(refused.status).toBe(409);
    expect(String(refused.body.error)).toBe(
      `payload: the list already has ${MAX_UNSETTLED_TASKS} tasks not yet settled, the most a worker may have (${MAX_UNSETTLED_TASKS}); nothing was filed until some are done`,
    );
    expect(unsettled()).toHaveLength(MAX_UNSETTLED_TASKS);
    // one settled: there is room for one
    await updateTasks(env.paths, "elf", (current) =>
      current.tasks.map((task) =>
        task.id === "t-a0000000" ? { ...task, state: "done" as const } : task,
      ),
    );
    expect((await file()).status).toBe(200);
    expect((await file()).status).toBe(409);
  });
});
