/**
 * One run can't crowd the others out of a process's spans: a box that floods
 * (door requests, tool events) gets its share and a count of what it lost,
 * while another run's spans all reach the collector.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KeyedShare } from "../../runner/ground/shares/keyed-share.ts";
import { SPAN_BURST } from "../../runner/ground/telemetry/span-budget.ts";
import { runIds, tracingFor } from "../../runner/ground/telemetry/tracing.ts";
import { OtlpReceiver } from "../support/otlp-receiver.ts";

describe("each run's share of the spans", () => {
  let collector: OtlpReceiver;
  beforeAll(async () => {
    collector = await OtlpReceiver.start();
  });
  afterAll(async () => {
    await collector?.stop();
  });

  it("keeps a flooding run to its share and every span of a quiet one", async () => {
    const tracing = await tracingFor(collector.url, "span-budget-test");
    if (!tracing) throw new Error("no tracing for an endpoint");
    const started = performance.now();
    for (let i = 0; i < 10_000; i++) tracing.childOf("run-flood", "door allow", { i }).end();
    const floodMs = performance.now() - started;
    for (let i = 0; i < 10; i++) tracing.childOf("run-quiet", "door allow", { i }).end();
    // its share refills at 100 a second: 20 ms is two more
    await new Promise((wait) => setTimeout(wait, 20));
    tracing.childOf("run-flood", "door deny", {}).end();
    await tracing.flush();

    const of = (runId: string) =>
      collector.spans.filter((span) => span.traceId === runIds(runId).traceId);
    expect(of("run-quiet")).toHaveLength(10);
    const flood = of("run-flood");
    expect(flood.length).toBeGreaterThanOrEqual(SPAN_BURST);
    // the burst, what refilled during the loop, and the one after the pause
    expect(flood.length).toBeLessThanOrEqual(SPAN_BURST + Math.ceil(floodMs / 10) + 2);
    // every span lost is said once, on the run's next span that was made
    const said = flood.reduce(
      (sum, span) => sum + Number(span.attributes["roster.spans_dropped"] ?? 0),
      0,
    );
    expect(said).toBe(10_001 - flood.length);
    expect(flood.find((span) => span.name === "door deny")?.attributes).toHaveProperty(
      "roster.spans_dropped",
    );
    await tracing.shutdown();
  });

  it("refills at its rate, forgets nothing it owes, and counts each drop once", () => {
    let now = 0;
    const budget = new KeyedShare(3, 10, () => now);
    expect([1, 2, 3, 4, 5].map(() => budget.take("r").allowed)).toEqual([
      true,
      true,
      true,
      false,
      false,
    ]);
    // another run has its own share
    expect(budget.take("other").allowed).toBe(true);
    now = 100; // one token back
    expect(budget.take("r")).toEqual({ allowed: true, dropped: 2 });
    expect(budget.take("r")).toEqual({ allowed: false, dropped: 1 });
    now = 10_000; // never more than the burst
    expect([1, 2, 3, 4].map(() => budget.take("r").allowed)).toEqual([true, true, true, false]);
  });
});
