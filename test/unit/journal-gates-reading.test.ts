import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { rosterPaths } from "../../runner/ground/config/paths.ts";
import { listGates } from "../../runner/records/gates/gate-record.ts";
import {
  appendJournal,
  JOURNAL_FIELD_CHARS,
  journalFile,
  outcomesSince,
  readJournal,
} from "../../runner/records/journal/journal.ts";
import { type Gate, writeGate } from "../../runner/services/actions/gates.ts";

/**
 * A worker's journal and gates grow for as long as it lives, and the action
 * host (on the loop every box's door shares) and every run's prompt read
 * them: the journal is read from its end, never whole, with each line's
 * fields bounded; a gate file changed on disk is read again, one that was not
 * is kept.
 */
const root = mkdtempSync(join(tmpdir(), "roster-journal-"));
const paths = rosterPaths({ ROSTER_ROOT: root });
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("the journal", () => {
  it("is read from its end however long it has grown, a torn line skipped", () => {
    const file = journalFile(paths, "old");
    mkdirSync(dirname(file), { recursive: true });
    // 64 MB of old lines: what a flood of outcome reports once left behind
    const old = `${JSON.stringify({ ts: "2026-01-01T00:00:00.000Z", worker: "old", run_id: "r0", kind: "executed", detail: "x".repeat(8_000) })}\n`;
    writeFileSync(file, old.repeat(8_000));
    appendFileSync(file, '{"torn": \n');
    for (let i = 0; i < 5; i++)
      appendJournal(paths, {
        worker: "old",
        run_id: `r${i + 1}`,
        kind: "executed",
        detail: `n${i}`,
      });
    expect(readJournal(paths, "old", 3).map((event) => event.detail)).toEqual(["n2", "n3", "n4"]);
    expect(outcomesSince(paths, "old", "2026-06-01T00:00:00.000Z")).toHaveLength(5);
  });

  it("keeps at most its bound of a line's summary and detail", () => {
    appendJournal(paths, {
      worker: "bounded",
      run_id: "r1",
      kind: "outcome-reported",
      summary: "s".repeat(10_000),
      detail: { note: "d".repeat(10_000) },
    });
    const [event] = readJournal(paths, "bounded", 1);
    expect(String(event?.summary)).toMatch(/^s{2000}… \(8000 more characters cut\)$/);
    expect(typeof event?.detail).toBe("string");
    expect(String(event?.detail).length).toBeLessThan(JOURNAL_FIELD_CHARS + 50);
  });
});

describe("the gates listing", () => {
  it("sees a gate replaced on disk at once, and a new one", () => {
    const gate: Gate = {
      id: "g-0000000a",
      worker: "org/desk",
      intent: "message-user",
      executor: "inbox",
      payload: { text: "hi" },
      rationale: "",
      run_id: "r1",
      task_id: null,
      state: "pending",
      filed_at: "2026-12-01T00:00:00.000Z",
    };
    writeGate(paths, gate);
    expect(listGates(paths, "desk").map((one) => one.state)).toEqual(["pending"]);
    writeGate(paths, { ...gate, state: "executed" });
    writeGate(paths, { ...gate, id: "g-0000000b", filed_at: "2026-12-01T00:00:01.000Z" });
    expect(listGates(paths, "desk").map((one) => [one.id, one.state])).toEqual([
      ["g-0000000a", "executed"],
      ["g-0000000b", "pending"],
    ]);
    // what a caller is handed is its own: changing it changes nothing kept
    const [first] = listGates(paths, "desk");
    if (first) first.state = "denied";
    expect(listGates(paths, "desk")[0]?.state).toBe("executed");
  });
});
