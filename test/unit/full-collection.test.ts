import { constants, type PerformanceEntry, PerformanceObserver } from "node:perf_hooks";
import { describe, expect, it } from "vitest";
import { BodyBudget } from "../../runner/boundary/gateway/bodies/budget.ts";

/**
 * Once a burst of held bodies is over, the gateway has V8 collect in full, so
 * an idle gateway gives their memory back. No process is started with
 * `--expose-gc` any more (it cost every command Node's own code cache): the
 * collection is exposed when first asked for. This test's process has no
 * `gc` of its own, as the gateway's has not.
 */
describe("the body budget's collection after a burst", () => {
  it("collects in full a moment after the last held body is given back", async () => {
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
    const majors: number[] = [];
    const observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        const { detail } = entry as PerformanceEntry & { detail?: { kind?: number } };
        const kind = detail?.kind;
        if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors.push(entry.startTime);
      }
    });
    observer.observe({ entryTypes: ["gc"] });
    try {
      const budget = new BodyBudget(64 * 1024 * 1024, 128 * 1024 * 1024);
      expect(budget.take("run-a", 40 * 1024 * 1024)).toBeUndefined();
      const given = performance.now();
      budget.give("run-a", 40 * 1024 * 1024);
      const deadline = Date.now() + 5_000;
      while (!majors.some((at) => at > given) && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 50));
      expect(majors.some((at) => at > given + 500)).toBe(true);
    } finally {
      observer.disconnect();
    }
  });
});
