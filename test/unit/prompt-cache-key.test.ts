import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { compilePrompt } from "../../runner/work/prompt/compile.ts";
import {
  MAX_TURN_CHARS,
  MAX_TURNS,
  readTurns,
  recordTurn,
} from "../../runner/work/prompt/turn-record.ts";
import { piCommand } from "../../runner/work/runs/engine-prompt.ts";
import { defaultWorkerView } from "../support/worker-view.ts";

/**
 * A worker's prompt-cache key holds still while what every run of it begins
 * with holds still (identity, runtime policy, connections, the engine), and
 * changes with any of them; pi is started with it as its session, which pi
 * sends as the provider's prompt_cache_key. A session's turns are kept for
 * `roster runs context --all`, bounded.
 */
const compile = (over: { identity?: string; task?: string; runId?: string } = {}, model = "") =>
  compilePrompt({
    worker: defaultWorkerView(model ? { model: { provider: "openai", model } } : {}),
    identity: over.identity ?? "You are elf.",
    task: over.task ?? "summarise the inbox",
    runId: over.runId ?? "r-1",
    ceiling_min: 30,
    outcomes: [],
  });

describe("the prompt-cache key", () => {
  it("is the same for runs that differ only after the stable blocks", () => {
    const one = compile();
    const two = compile({ task: "something else", runId: "r-2" });
    expect(one.cacheKey).toMatch(/^roster-[0-9a-f]{24}$/);
    expect(two.cacheKey).toBe(one.cacheKey);
    expect(two.system).not.toBe(one.system);
  });

  it("changes with the identity, the worker and the model", () => {
    const base = compile().cacheKey;
    expect(compile({ identity: "You are elf, terse." }).cacheKey).not.toBe(base);
    expect(compile({}, "gpt-5").cacheKey).not.toBe(base);
    const other = compilePrompt({
      worker: defaultWorkerView({ name: "dobby" }),
      identity: "You are elf.",
      task: "summarise the inbox",
      runId: "r-1",
      ceiling_min: 30,
      outcomes: [],
    });
    expect(other.cacheKey).not.toBe(base);
  });

  it("names pi's session, so pi sends it as the cache key", () => {
    const prompt = compile();
    const command = piCommand("json", prompt);
    const at = command.indexOf("--session-id");
    expect(at).toBeGreaterThan(0);
    expect(command[at + 1]).toBe(prompt.cacheKey);
    expect(piCommand("rpc", prompt)).toContain(prompt.cacheKey);
  });
});

describe("a session's turns, kept", () => {
  it("reads back in order, each cut at its bound, none past the last kept", () => {
    const dir = mkdtempSync(join(tmpdir(), "roster-turns-"));
    try {
      expect(readTurns(dir)).toEqual([]);
      recordTurn(dir, 2, "second");
      recordTurn(dir, 1, "first");
      recordTurn(dir, 3, "x".repeat(MAX_TURN_CHARS + 10));
      recordTurn(dir, MAX_TURNS + 1, "past the bound");
      const turns = readTurns(dir);
      expect(turns.map((one) => one.turn)).toEqual([1, 2, 3]);
      expect(turns[0]?.input).toBe("first");
      expect(turns[2]?.input).toMatch(/\[cut: the turn was \d+ characters, \d+ kept\]$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
