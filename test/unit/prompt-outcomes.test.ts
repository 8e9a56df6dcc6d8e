import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { rosterPaths } from "../../runner/ground/config/paths.ts";
import { appendJournal, outcomesSince } from "../../runner/records/journal/journal.ts";
import {
  compilePrompt,
  OUTCOMES_MAX_CHARS,
  SESSION_PACING,
} from "../../runner/work/prompt/compile.ts";
import { defaultWorkerView } from "../support/worker-view.ts";

/** A worker learns what became of its proposals at its next run, in a bounded block. */
const roots: string[] = [];
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
});

const worker = defaultWorkerView();

describe("outcomes since the last run", () => {
  it("lists dispositions after the last run's start, not proposals or older ones", async () => {
    const root = await mkdtemp(join(tmpdir(), "roster-outcomes-"));
    roots.push(root);
    const paths = rosterPaths({ ROSTER_ROOT: root });
    appendJournal(paths, {
      worker: "elf",
      run_id: "r0",
      kind: "executed",
      intent: "email-send",
      gate_id: "g-old",
    });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const since = new Date().toISOString();
    await new Promise((resolve) => setTimeout(resolve, 5));
    appendJournal(paths, {
      worker: "elf",
      run_id: "r1",
      kind: "gate-filed",
      intent: "email-send",
      gate_id: "g-1",
    });
    appendJournal(paths, {
      worker: "elf",
      run_id: "r1",
      kind: "denied",
      intent: "email-send",
      gate_id: "g-1",
      detail: { by: "cli:ann", note: "not this week" },
    });
    const lines = outcomesSince(paths, "elf", since);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/denied email-send \(g-1\): .*not this week/);

    const prompt = compilePrompt({
      worker,
      identity: "",
      task: "go",
      runId: "r2",
      ceiling_min: 5,
      outcomes: lines,
    });
    expect(prompt.system).toContain("[ROSTER SYSTEM BLOCK: OUTCOMES SINCE YOUR LAST RUN]");
    expect(prompt.system).toContain("not this week");
    const none = compilePrompt({
      worker,
      identity: "",
      task: "go",
      runId: "r2",
      ceiling_min: 5,
      outcomes: [],
    });
    expect(none.system).not.toContain("OUTCOMES");
  });

  it("keeps the newest within its bound and says how many it left out", () => {
    const many = Array.from(
      { length: 200 },
      (_, index) => `2026-11-30 07:00 executed email-send (g-${index}): ${"x".repeat(60)}`,
    );
    const prompt = compilePrompt({
      worker,
      identity: "",
      task: "go",
      runId: "r",
      ceiling_min: 5,
      outcomes: many,
    });
    const block = prompt.blocks.find((entry) => entry.label === "OUTCOMES SINCE YOUR LAST RUN");
    expect(block?.chars).toBeLessThanOrEqual(OUTCOMES_MAX_CHARS + 200);
    expect(prompt.system).toContain("(g-199)");
    expect(prompt.system).not.toContain("(g-0)");
    expect(prompt.system).toMatch(/\(\d+ earlier ones omitted\)/);
  });
});

describe("a session's pacing", () => {
  const base = { worker, identity: "", task: "", runId: "r9", ceiling_min: 60 };

  it("tells a chat session to answer now and file long work as a task that reports back", () => {
    const prompt = compilePrompt({
      ...base,
      session: { channel: "term-ann-elf", provider: "term", trusted: true, replyBy: "plain text" },
    });
    expect(prompt.system).toContain(SESSION_PACING);
    expect(SESSION_PACING).toMatch(/answer the person now/);
    expect(SESSION_PACING).toMatch(/file_task/);
  });

  it("leaves one-shot runs and tasks without it: nobody waits in a channel there", () => {
    expect(compilePrompt({ ...base, task: "go" }).system).not.toContain("pace:");
    expect(compilePrompt({ ...base, task: "go", taskId: "t-1" }).system).not.toContain("pace:");
  });
});
