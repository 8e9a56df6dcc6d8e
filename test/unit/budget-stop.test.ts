import { appendFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { budgetStop, describeBudgetStop } from "../../runner/work/runs/budget-stop.ts";

/** Reading why a run stopped from the gateway's audit log: its last decision, from the log's tail. */
const line = (runId: string, status: number, extra: Record<string, unknown> = {}) =>
  `${JSON.stringify({
    decision_id: "x",
    ts: new Date().toISOString(),
    verdict: "allow",
    rule: "model",
    subject: "org/elf",
    run_id: runId,
    request: {
      protocol: "https",
      method: "POST",
      host: "models.test",
      port: 443,
      path: "/v1/chat/completions",
    },
    status,
    ...extra,
  })}\n`;
const refused = (runId: string) =>
  line(runId, 402, {
    note: "budget",
    budget: { detail: "tokens over day cap (50.0000/40.0000)", retry_after_secs: 7200 },
  });

describe("budgetStop", () => {
  let audit: string;
  beforeEach(async () => {
    audit = await mkdtemp(join(tmpdir(), "roster-audit-"));
  });
  afterEach(async () => {
    await rm(audit, { recursive: true, force: true });
  });
  const file = () => join(audit, "decisions.jsonl");

  it("finds a run whose last decision was a budget refusal, and says when it resets", async () => {
    await writeFile(file(), line("run-a", 200) + refused("run-a") + line("run-b", 200));
    const stop = budgetStop(audit, "run-a");
    expect(stop).toEqual({
      detail: "tokens over day cap (50.0000/40.0000)",
      retryAfterSecs: 7200,
      host: "models.test",
    });
    expect(stop && describeBudgetStop(stop)).toBe(
      "the model budget is used up (tokens over day cap (50.0000/40.0000), refused at models.test); it resets in 2 h",
    );
  });

  it("is not a budget stop when a later call went through, or when nothing was refused", async () => {
    await writeFile(file(), refused("run-a") + line("run-a", 200) + line("run-b", 403));
    expect(budgetStop(audit, "run-a")).toBeUndefined();
    expect(budgetStop(audit, "run-b")).toBeUndefined();
    expect(budgetStop(audit, "run-c")).toBeUndefined();
    expect(budgetStop(join(audit, "missing"), "run-a")).toBeUndefined();
  });

  it("reads only the log's tail, whatever its size, and skips a torn first line", async () => {
    const filler = line("other", 200).repeat(30_000);
    await writeFile(file(), refused("run-old") + filler);
    await appendFile(file(), `{"torn\n${refused("run-new")}`);
    expect(budgetStop(audit, "run-new")?.retryAfterSecs).toBe(7200);
    // past the tail: too old to be why a run that just ended stopped
    expect(budgetStop(audit, "run-old")).toBeUndefined();
  });
});
