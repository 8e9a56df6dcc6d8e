import { describe, expect, it } from "vitest";
import { newRunId } from "../../runner/records/run-records/run-record.ts";

/**
 * Run ids sort by when their run started, to the millisecond: `runs ls` and
 * everything that takes "the newest run" read them in that order, and two runs
 * in one second are common on a fast machine.
 */
describe("run ids", () => {
  it("keep their shape and sort by the millisecond within one second", () => {
    const at = Date.parse("2026-12-04T19:45:01.000Z");
    const ids = [999, 5, 120, 0, 64].map((ms) => newRunId(new Date(at + ms)));
    for (const id of ids) expect(id).toMatch(/^2026-12-04-19-45-01-[0-9a-f]{11}$/);
    const byId = [...ids].sort();
    expect(byId).toEqual([ids[3], ids[1], ids[4], ids[2], ids[0]]);
    // and a later second still sorts after every one of them
    expect(newRunId(new Date(at + 1000)) > (byId.at(-1) ?? "")).toBe(true);
  });

  it("stay unique without coordination, even in one millisecond", () => {
    const now = new Date();
    const ids = new Set(Array.from({ length: 1000 }, () => newRunId(now)));
    expect(ids.size).toBe(1000);
  });
});
