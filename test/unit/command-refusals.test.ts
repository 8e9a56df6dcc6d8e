import { describe, expect, it } from "vitest";
import {
  REFUSAL_WINDOW_MS,
  REFUSALS_WRITTEN,
  RefusalBound,
  refusedArgs,
} from "../../runner/services/slash/refusals.ts";

/**
 * What a refused chat command may leave in the audit log: an excerpt of its
 * arguments, and a few lines a minute per asker, the rest counted into the
 * next line written. The clock is handed in, so a minute passes at once.
 */
describe("a refused command's audit line", () => {
  it("keeps 64 characters of each argument and 256 of them all", () => {
    const kept = refusedArgs({ prompt: "p".repeat(8_000), every: "7d", note: "n".repeat(500) });
    expect(kept.prompt).toHaveLength(64);
    expect(kept.prompt?.endsWith("…")).toBe(true);
    expect(kept.every).toBe("7d");
    const total = Object.entries(kept).reduce((sum, [k, v]) => sum + k.length + v.length, 0);
    expect(total).toBeLessThanOrEqual(256);
    const many = Object.fromEntries(
      Array.from({ length: 40 }, (_, i) => [`k${i}`, "v".repeat(60)]),
    );
    const cut = Object.entries(refusedArgs(many));
    expect(cut.reduce((sum, [k, v]) => sum + k.length + v.length, 0)).toBeLessThanOrEqual(256);
  });

  it("is written 5 times a minute per asker; the next one written says how many were left out", () => {
    let now = 1_000_000;
    const bound = new RefusalBound(() => now);
    const written = Array.from({ length: 8 }, () => bound.admit("discord:1"));
    expect(written.filter(Boolean)).toHaveLength(REFUSALS_WRITTEN);
    expect(written.slice(REFUSALS_WRITTEN)).toEqual([undefined, undefined, undefined]);
    // another asker has a bound of their own
    expect(bound.admit("discord:2")).toEqual({ leftOut: 0 });
    now += REFUSAL_WINDOW_MS;
    expect(bound.admit("discord:1")).toEqual({ leftOut: 3 });
    expect(bound.admit("discord:1")).toEqual({ leftOut: 0 });
  });
});
