import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rosterPaths } from "../../runner/ground/config/paths.ts";
import { parseMemory } from "../../runner/work/memory/notes.ts";
import { recallOf } from "../../runner/work/memory/recall.ts";
import { memoryBlock } from "../../runner/work/prompt/memory.ts";
import { runRoster } from "../support/cli.ts";

/**
 * `roster worker memory …` (ours: `roster memory …`) on a deployment made by
 * `roster init`: the operator lists, corrects, forgets, pins and compacts a
 * worker's notes, and every change is a line in the worker's own file naming
 * who made it, read back exactly as a run's prompt reads it.
 */
let root: string;
let env: NodeJS.ProcessEnv;
let file: string;

const lines = () =>
  readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "roster-memory-"));
  env = { ROSTER_ROOT: root, USER: "ops" };
  const init = await runRoster(["init"], env);
  expect(init.code, init.stderr).toBe(0);
  const paths = rosterPaths(env);
  const dir = join(paths.data, "workers", "elf", "store", "memory");
  mkdirSync(dir, { recursive: true });
  file = join(dir, "memory.jsonl");
  writeFileSync(
    file,
    [
      JSON.stringify({ id: "ann", text: "Ann runs payments" }),
      JSON.stringify({ id: "bob", text: "Bob is on leave", pinned: true }),
      "not a note",
      JSON.stringify({ id: "ann", text: "Ann runs payments; prefers short answers" }),
      JSON.stringify({ id: "old", text: "stale" }),
      JSON.stringify({ id: "old", op: "forget" }),
    ].join("\n"),
  ); // no final newline: the worker's last line must stay whole
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("roster worker memory", () => {
  it("ls shows the live notes as a prompt orders them, and refuses scopes not kept", async () => {
    const listed = await runRoster(["worker", "memory", "ls", "elf", "--json"], env);
    expect(listed.code, listed.stderr).toBe(0);
    const body = JSON.parse(listed.stdout) as { notes: Array<{ id: string }>; skipped: number };
    expect(body.notes.map((note) => note.id)).toEqual(["bob", "ann"]);
    expect(body.skipped).toBe(1);
    const scoped = await runRoster(
      ["worker", "memory", "ls", "elf", "--scope", "channel", "--scope-id", "1451951375079"],
      env,
    );
    expect(scoped.code).toBe(2);
    expect(scoped.stderr).toMatch(/one memory per worker/);
    const nobody = await runRoster(["worker", "memory", "ls", "nobody"], env);
    expect(nobody.code).toBe(2);
    expect(nobody.stderr).toMatch(/no worker nobody/);
  });

  it("correct appends a line naming the operator; the prompt reads the new text", async () => {
    const corrected = await runRoster(
      ["worker", "memory", "correct", "elf", "ann", "Ann", "runs", "treasury"],
      env,
    );
    expect(corrected.code, corrected.stderr).toBe(0);
    const last = lines().at(-1);
    expect(last).toMatchObject({ id: "ann", text: "Ann runs treasury", by: "cli:ops" });
    // the worker's unterminated last line stayed a line of its own
    expect(lines().at(-2)).toEqual({ id: "old", op: "forget" });
    const notes = parseMemory(readFileSync(file, "utf8")).notes;
    expect(notes.find((note) => note.id === "ann")?.text).toBe("Ann runs treasury");
    const shown = await runRoster(["worker", "memory", "show", "elf", "ann"], env);
    expect(shown.stdout).toMatch(/^ann: Ann runs treasury/);
    expect(shown.stdout).toMatch(/Ann runs payments by the worker/);
    expect(shown.stdout).toMatch(/Ann runs treasury by cli:ops at 20/);
    const missing = await runRoster(["worker", "memory", "correct", "elf", "zed", "x"], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/no note "zed" is live/);
  });

  it("pin, disable, enable and rm change what a prompt shows", async () => {
    const ids = () => parseMemory(readFileSync(file, "utf8")).notes.map((note) => note.id);
    expect((await runRoster(["worker", "memory", "pin", "elf", "ann"], env)).code).toBe(0);
    expect(ids()).toEqual(["ann", "bob"]);
    expect((await runRoster(["worker", "memory", "disable", "elf", "bob"], env)).code).toBe(0);
    expect(ids()).toEqual(["ann"]);
    expect((await runRoster(["worker", "memory", "enable", "elf", "bob"], env)).code).toBe(0);
    expect(parseMemory(readFileSync(file, "utf8")).notes).toContainEqual({
      id: "bob",
      text: "Bob is on leave",
      pinned: true,
    });
    expect((await runRoster(["worker", "memory", "rm", "elf", "ann"], env)).code).toBe(0);
    expect(ids()).toEqual(["bob"]);
    const again = await runRoster(["worker", "memory", "enable", "elf", "bob"], env);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/live already/);
  });

  it("compact keeps the live notes and the worker's other lines, and the file as it was", async () => {
    const before = readFileSync(file, "utf8");
    const notesBefore = parseMemory(before).notes;
    const compacted = await runRoster(["worker", "memory", "compact", "elf", "--json"], env);
    expect(compacted.code, compacted.stderr).toBe(0);
    const after = readFileSync(file, "utf8");
    expect(parseMemory(after).notes).toEqual(notesBefore);
    expect(after).toContain("not a note");
    expect(after.split("\n").filter(Boolean).length).toBe(2);
    expect(readFileSync(`${file}.before-compact`, "utf8").trim()).toBe(before.trim());
  });

  it("never writes through a symlink a box planted", async () => {
    const outside = join(root, "outside.jsonl");
    writeFileSync(outside, `${JSON.stringify({ id: "x", text: "host file" })}\n`);
    const paths = rosterPaths(env);
    const dir = join(paths.data, "workers", "elf", "store", "memory");
    rmSync(file);
    symlinkSync(outside, file);
    const refused = await runRoster(["worker", "memory", "rm", "elf", "x"], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/symlink/);
    expect(readFileSync(outside, "utf8")).toBe(
      `${JSON.stringify({ id: "x", text: "host file" })}\n`,
    );
    rmSync(join(dir, "memory.jsonl"));
  });

  it("runs recall reads back the notes a run's MEMORY block carried", () => {
    const read = parseMemory(
      [
        JSON.stringify({ id: "a", text: "first" }),
        JSON.stringify({ id: "b", text: "second", pinned: true }),
        JSON.stringify({ id: "c", text: "third" }),
      ].join("\n"),
    );
    const block = memoryBlock({ max_notes: 2, max_chars: 6000 }, read, 100_000);
    expect(block).toBeDefined();
    const recall = recallOf(block ? [block] : []);
    expect(recall).toMatchObject({
      kind: "run",
      notes: [
        { id: "b", text: "second", pinned: true },
        { id: "c", text: "third", pinned: false },
      ],
    });
    expect(recall.kind === "run" && recall.status.join(" ")).toMatch(/1 more note/);
    expect(recallOf([])).toEqual({ kind: "none" });
  });
});
