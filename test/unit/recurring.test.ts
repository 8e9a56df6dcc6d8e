import { describe, expect, it } from "vitest";
import type { Task, TaskList, Template } from "../../runner/records/task-list/store.ts";
import { dependencyProblem, readiness } from "../../runner/work/tasks/readiness.ts";
import { cronProblem, firesBetween, inWindow, nextFire } from "../../runner/work/tasks/schedule.ts";
import { applyTemplates } from "../../runner/work/tasks/template-edit.ts";
import { fireTemplates, HEARTBEAT_ID, syncHeartbeat } from "../../runner/work/tasks/templates.ts";

const at = (iso: string) => new Date(iso);
const template = (fields: Partial<Template>): Template => ({
  id: "r-0000aaaa",
  prompt: "weekly report",
  cron: "0 9 * * 1-5",
  ceiling_min: 20,
  filed_at: "2026-11-30T00:00:00.000Z",
  filed_by: "cli:ops",
  standing: "owner",
  next_at: "2026-12-01T09:00:00.000Z",
  ...fields,
});
const task = (fields: Partial<Task>): Task => ({
  id: "t-00000001",
  prompt: "p",
  ceiling_min: 5,
  state: "pending",
  filed_at: "2026-12-01T00:00:00.000Z",
  filed_by: "cli:ops",
  ...fields,
});

describe("a cron expression read in the org's zone", () => {
  it("fires at 09:00 Berlin on weekdays, across a weekend, and refuses what isn't 5 fields", () => {
    // Friday 12:00 UTC → the next weekday 09:00 in Berlin is Monday 08:00 UTC (winter time)
    expect(nextFire({ cron: "0 9 * * 1-5" }, at("2026-12-04T12:00:00Z"), "Europe/Berlin")).toEqual(
      at("2026-12-07T08:00:00Z"),
    );
    expect(nextFire({ cron: "0 9 * * 1-5" }, at("2026-12-04T12:00:00Z"), "UTC")).toEqual(
      at("2026-12-07T09:00:00Z"),
    );
    expect(cronProblem("0 9 * * 1-5")).toBeUndefined();
    expect(cronProblem("0 0 9 * * 1-5")).toMatch(/6 fields; a cron expression has 5/);
    expect(cronProblem("61 9 * * *")).toMatch(/minute/);
  });

  it("counts an interval on from the fire it follows, so a late tick doesn't shift it", () => {
    const anchor = at("2026-12-01T09:00:00Z");
    expect(nextFire({ every: "30m" }, at("2026-12-01T09:47:00Z"), "UTC", anchor)).toEqual(
      at("2026-12-01T10:00:00Z"),
    );
    expect(firesBetween({ every: "1h" }, anchor, at("2026-12-01T12:30:00Z"), "UTC")).toBe(3);
  });

  it("keeps a window in host-local time, including one over midnight", () => {
    expect(inWindow("09:00-17:00", at("2026-12-01T08:30:00Z"), "Europe/Berlin")).toBe(true);
    expect(inWindow("09:00-17:00", at("2026-12-01T07:30:00Z"), "Europe/Berlin")).toBe(false);
    expect(inWindow("22:00-06:00", at("2026-12-01T23:30:00Z"), "UTC")).toBe(true);
    expect(inWindow("22:00-06:00", at("2026-12-01T12:00:00Z"), "UTC")).toBe(false);
  });
});

describe("firing templates", () => {
  it("files one task per fire and moves the cursor past now", () => {
    const list: TaskList = { version: 3, tasks: [], recurring: [template({})] };
    const fired = fireTemplates(list, at("2026-12-01T09:00:05Z"), "UTC");
    expect(fired?.list.tasks).toHaveLength(1);
    expect(fired?.list.tasks[0]).toMatchObject({
      prompt: "weekly report",
      template_id: "r-0000aaaa",
      standing: "owner",
      ceiling_min: 20,
    });
    expect(fired?.list.tasks[0]?.note).toBeUndefined();
    expect(fired?.list.recurring?.[0]?.next_at).toBe("2026-12-02T09:00:00.000Z");
    // not due yet: nothing
    expect(fireTemplates(list, at("2026-12-01T08:59:00Z"), "UTC")).toBeUndefined();
  });

  it("makes one catch-up task for fires missed while down, saying so, never one per fire", () => {
    const list: TaskList = { version: 3, tasks: [], recurring: [template({})] };
    // down from Tuesday 08:00 to Friday 10:00: Tue, Wed, Thu and Fri 09:00 were missed
    const fired = fireTemplates(list, at("2026-12-04T10:00:00Z"), "UTC");
    expect(fired?.list.tasks).toHaveLength(1);
    expect(fired?.list.tasks[0]?.catch_up).toMatch(/^due at /);
    expect(fired?.list.tasks[0]?.note).toMatch(
      /catch-up: due at 2026-12-01T09:00:00.000Z \(and 3 more fires since\)/,
    );
    expect(fired?.list.recurring?.[0]?.next_at).toBe("2026-12-07T09:00:00.000Z");
  });

  it("files nothing while the last fire's task is still open, but moves on", () => {
    const open = task({ id: "t-0000000a", state: "pending" });
    const list: TaskList = {
      version: 1,
      tasks: [open],
      recurring: [template({ last_task_id: open.id })],
    };
    const fired = fireTemplates(list, at("2026-12-01T09:00:05Z"), "UTC");
    expect(fired?.list.tasks).toEqual([open]);
    expect(fired?.notes[0]).toMatch(/skipped, its last task t-0000000a is still pending/);
    expect(fired?.list.recurring?.[0]?.next_at).toBe("2026-12-02T09:00:00.000Z");
  });

  it("keeps the heartbeat in step with the config, and the worker can't name it", () => {
    const now = at("2026-12-01T10:00:00Z");
    const beat = { every: "30m", prompt: "beat", ceilingMin: 10 };
    const added = syncHeartbeat({ version: 1, tasks: [] }, beat, now, "UTC");
    expect(added?.recurring?.[0]).toMatchObject({
      id: HEARTBEAT_ID,
      system: true,
      next_at: now.toISOString(),
    });
    const list = { version: 2, tasks: [], ...added } as TaskList;
    expect(syncHeartbeat(list, beat, now, "UTC")).toBeUndefined();
    expect(syncHeartbeat(list, undefined, now, "UTC")?.recurring).toEqual([]);
    expect(() =>
      applyTemplates(list.recurring ?? [], [{ id: HEARTBEAT_ID, prompt: "x", every: "1m" }], {
        by: "run:x",
        standing: "proactive",
        now,
        zone: "UTC",
      }),
    ).toThrow(/r-heartbeat is the host's heartbeat/);
    // a worker's own list leaves the heartbeat where it was
    const mine = applyTemplates(
      list.recurring ?? [],
      [{ prompt: "daily digest", cron: "0 7 * * *" }],
      {
        by: "run:x",
        standing: "proactive",
        now,
        zone: "UTC",
      },
    );
    expect(mine.map((one) => one.id)[0]).toBe(HEARTBEAT_ID);
    expect(mine[1]).toMatchObject({ prompt: "daily digest", next_at: "2026-12-02T07:00:00.000Z" });
  });
});

describe("depends_on and pacing", () => {
  const none = () => undefined;
  it("waits for a dependency, is blocked by a failed one, and refuses a cycle", () => {
    const a = task({ id: "t-0000000a", state: "claimed" });
    const b = task({ id: "t-0000000b", depends_on: ["t-0000000a"] });
    const find = (id: string) => [a, b].find((one) => one.id === id);
    const now = at("2026-12-01T10:00:00Z");
    expect(readiness(b, find, now, "UTC", none)).toMatchObject({ kind: "wait" });
    a.state = "done";
    expect(readiness(b, find, now, "UTC", none)).toEqual({ kind: "ready" });
    a.state = "failed";
    a.note = "the site was down";
    expect(readiness(b, find, now, "UTC", none)).toEqual({
      kind: "block",
      note: "blocked: t-0000000a failed (the site was down)",
    });
    const cyclic = [
      { id: "t-1", depends_on: ["t-2"] },
      { id: "t-2", depends_on: ["t-3"] },
      { id: "t-3", depends_on: ["t-1"] },
    ];
    expect(dependencyProblem(cyclic, new Set(["t-1", "t-2", "t-3"]))).toBe(
      "depends_on makes a cycle: t-1 → t-2 → t-3 → t-1",
    );
    expect(dependencyProblem([{ id: "t-1", depends_on: ["t-9"] }], new Set(["t-1"]))).toMatch(
      /t-9, which is not on the list/,
    );
  });

  it("holds a proactive task at the soft stop and lets an owner task run", () => {
    const pressure = () => ({
      softStop: 0.8,
      limit: {
        scope: "org/elf",
        currency: "tokens",
        window: "day" as const,
        max: 1000,
        used: 850,
        remaining: 150,
        resets_at: "2026-12-02T00:00:00.000Z",
      },
    });
    const none = () => undefined;
    const now = at("2026-12-01T10:00:00Z");
    const mine = readiness(task({ standing: "proactive" }), none, now, "UTC", pressure);
    expect(mine).toMatchObject({ kind: "wait" });
    expect(mine.kind === "wait" && mine.note).toMatch(
      /tokens\/day at 85% of its limit \(proactive tasks wait from 80%/,
    );
    expect(readiness(task({ standing: "owner" }), none, now, "UTC", pressure)).toEqual({
      kind: "ready",
    });
  });
});
