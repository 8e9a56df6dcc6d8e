import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { rosterPaths } from "../../runner/ground/config/paths.ts";
import { finishedStates, journalFile } from "../../runner/records/task-list/finished.ts";
import {
  readLive,
  readTasks,
  type Task,
  updateTasks,
} from "../../runner/records/task-list/store.ts";

/** Finished tasks leave the list file for the journal; every reader still sees them. */
const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});
const newPaths = () => {
  const root = mkdtempSync(join(tmpdir(), "roster-journal-"));
  roots.push(root);
  return rosterPaths({ ROSTER_ROOT: root });
};
const task = (id: string, state: Task["state"], minute: number): Task => ({
  id,
  prompt: id,
  ceiling_min: 5,
  state,
  filed_at: `2026-12-01T10:${String(minute).padStart(2, "0")}:00.000Z`,
  filed_by: "cli:ops",
});

describe("the finished-task journal", () => {
  it("moves a task out of the list when it finishes, and back when it is requeued", async () => {
    const paths = newPaths();
    await updateTasks(paths, "elf", () => [task("t-1", "pending", 1), task("t-2", "pending", 2)]);
    await updateTasks(paths, "elf", (list) =>
      list.tasks.map((one) => (one.id === "t-1" ? { ...one, state: "done", note: "ok" } : one)),
    );
    expect(readLive(paths, "elf").tasks.map((one) => one.id)).toEqual(["t-2"]);
    expect(readTasks(paths, "elf").tasks.map((one) => [one.id, one.state])).toEqual([
      ["t-1", "done"],
      ["t-2", "pending"],
    ]);
    expect(finishedStates(paths, "elf").get("t-1")).toEqual({ state: "done", note: "ok" });

    // requeued: live again, and the list wins over its old journal line
    await updateTasks(paths, "elf", (list) =>
      list.tasks.map((one) => (one.id === "t-1" ? { ...one, state: "pending" } : one)),
    );
    expect(readTasks(paths, "elf").tasks.map((one) => one.state)).toEqual(["pending", "pending"]);
    // finishing again appends a newer line, which the incremental reader takes
    await updateTasks(paths, "elf", (list) =>
      list.tasks.map((one) => (one.id === "t-1" ? { ...one, state: "failed" } : one)),
    );
    expect(finishedStates(paths, "elf").get("t-1")?.state).toBe("failed");
    expect(readFileSync(journalFile(paths, "elf"), "utf8").trim().split("\n")).toHaveLength(2);
  });

  it("reads only complete lines, and a torn one when it is finished", () => {
    const paths = newPaths();
    const file = journalFile(paths, "elf");
    const line = JSON.stringify(task("t-9", "done", 9));
    // nothing yet
    expect(finishedStates(paths, "elf").size).toBe(0);
    mkdirSync(dirname(file), { recursive: true });
    appendFileSync(file, `${line.slice(0, 20)}`);
    expect(finishedStates(paths, "elf").has("t-9")).toBe(false);
    appendFileSync(file, `${line.slice(20)}\n`);
    expect(finishedStates(paths, "elf").get("t-9")?.state).toBe("done");
  });
});
