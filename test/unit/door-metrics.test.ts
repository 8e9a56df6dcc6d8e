import { describe, expect, it } from "vitest";
import type { DecisionRecord } from "../../runner/boundary/gateway/audit/audit.ts";
import { DoorMetrics } from "../../runner/boundary/gateway/audit/door-metrics.ts";

/** The door's counts: labelled by worker, verdict and rule only, never by what a box chose. */
const line = (rule: string, path: string, host = "api.test"): DecisionRecord => ({
  decision_id: "d",
  ts: new Date().toISOString(),
  verdict: "deny",
  rule,
  subject: "org/elf",
  run_id: "r1",
  status: 403,
  request: {
    protocol: "https",
    method: "GET",
    host,
    port: 443,
    path,
    query: "",
    headers: {},
    bodySize: 0,
    mcp: null,
  },
  spend: { tokens: 12 },
  bytes: 100,
});

const series = (text: string, name: string) =>
  text.split("\n").filter((one) => one.startsWith(`${name}{`));

describe("the door's metrics", () => {
  it("counts by worker, verdict and rule, whatever the paths and hosts", async () => {
    const metrics = new DoorMetrics();
    for (let i = 0; i < 1000; i++) metrics.record(line("no-blogs", `/p/${i}`, `h${i}.test`), 0.002);
    const text = await metrics.text();
    expect(series(text, "roster_door_decisions_total")).toEqual([
      'roster_door_decisions_total{worker="elf",verdict="deny",rule="no-blogs"} 1000',
    ]);
    expect(text).not.toMatch(/h\d+\.test|\/p\/\d/);
    expect(series(text, "roster_spend_total")).toEqual([
      'roster_spend_total{worker="elf",meter="tokens"} 12000',
    ]);
    expect(series(text, "roster_door_bytes_total")).toEqual([
      'roster_door_bytes_total{worker="elf"} 100000',
    ]);
  });

  it("keeps a label's first 200 values and counts the rest as other", async () => {
    const metrics = new DoorMetrics();
    for (let i = 0; i < 300; i++) metrics.record(line(`rule-${i}`, "/"), 0.001);
    const rules = series(await metrics.text(), "roster_door_decisions_total");
    expect(rules).toHaveLength(201);
    expect(rules).toContain(
      'roster_door_decisions_total{worker="elf",verdict="deny",rule="other"} 100',
    );
  });
});
