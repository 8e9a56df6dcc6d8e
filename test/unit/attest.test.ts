import { describe, expect, it } from "vitest";
import type { DecisionRecord } from "../../runner/boundary/gateway/audit/audit.ts";
import { refusedModelCall } from "../../runner/work/runs/run-decisions.ts";
import { attest, type RunFacts } from "../../runner/work/tasks/attest.ts";

/** The host's rules for how a task ended, fact by fact (attest.ts). */
const complete = { status: "completed", note: "summary written" } as const;
const clean = (over: Partial<RunFacts> = {}): RunFacts => ({
  runId: "run-1",
  record: { id: "run-1", ended_by: "exit", exit_code: 0, ceiling_min: 20 },
  report: complete,
  refusedModelCall: undefined,
  budget: undefined,
  gates: [],
  serverStopping: false,
  ...over,
});
const ended = (ended_by: NonNullable<RunFacts["record"]>["ended_by"], extra = {}) => ({
  record: { id: "run-1", ended_by, ceiling_min: 20, ...extra },
});
const gate = (id: string, state: RunFacts["gates"][number]["state"], extra = {}) => ({
  id,
  intent: "send-email",
  state,
  ...extra,
});

describe("attest", () => {
  it("believes a report of complete from a run that ended well and filed nothing", () => {
    expect(attest(clean())).toEqual({ state: "done", note: "summary written", said: "done" });
  });

  it("fails a run that hit its ceiling after reporting complete, saying why in one line", () => {
    const verdict = attest(clean(ended("ceiling")));
    expect(verdict.state).toBe("failed");
    expect(verdict.note).toBe(
      'failed: the run hit its 20-minute ceiling after reporting complete ("summary written")',
    );
    expect(verdict.note).not.toContain("\n");
  });

  it("fails a run that crashed, stalled, was killed or broke off, whatever it reported", () => {
    const cases: Array<[Partial<RunFacts>, RegExp]> = [
      [ended("crash"), /^failed: its runner died mid-run .* after reporting complete/],
      [ended("stalled"), /^failed: the run stalled/],
      [ended("signal"), /^failed: the run was killed/],
      [ended("error", { error: "the gateway went away" }), /broke off: the gateway went away/],
      [ended("exit", { exit_code: 1 }), /^failed: the run crashed \(its engine exited 1\)/],
    ];
    for (const [facts, note] of cases) {
      // (a crash with no report is requeued: see below)
      const reports = [complete, { status: "failed", note: "no" } as const, undefined];
      for (const report of facts.record?.ended_by === "crash" ? reports.slice(0, 2) : reports) {
        const verdict = attest(clean({ ...facts, report }));
        expect(verdict.state).toBe("failed");
        if (report === complete) expect(verdict.note).toMatch(note);
      }
    }
  });

  it("fails a run whose last model call was refused after it reported complete", () => {
    const verdict = attest(
      clean({ refusedModelCall: "refused by the gateway at models.test (403: no rule allows it)" }),
    );
    expect(verdict).toMatchObject({
      state: "failed",
      note: expect.stringMatching(
        /^failed: its last model call was refused by the gateway at models\.test .* after reporting complete/,
      ),
    });
    const budget = {
      detail: "tokens over day cap (50.0000/40.0000)",
      retryAfterSecs: 600,
      host: "m",
    };
    expect(attest(clean({ ...ended("budget"), budget }))).toMatchObject({
      state: "failed",
      note: expect.stringMatching(
        /^failed: its model call was refused at m: the model budget is used up \(tokens/,
      ),
    });
  });

  it("keeps today's requeues: the server stopping, its death before a report, a budget stop without one", () => {
    expect(attest(clean({ ...ended("signal"), serverStopping: true }))).toMatchObject({
      state: "pending",
      note: "requeued: the server stopped during its run",
    });
    expect(attest(clean({ ...ended("crash"), report: undefined }))).toMatchObject({
      state: "pending",
      note: "requeued: run run-1 crashed",
    });
    expect(attest(clean({ record: undefined, report: undefined }))).toMatchObject({
      state: "pending",
      note: "requeued: run run-1 left no record",
    });
    const budget = { detail: "tokens over day cap", retryAfterSecs: 600, host: "models.test" };
    expect(attest(clean({ ...ended("budget"), report: undefined, budget }))).toMatchObject({
      state: "pending",
      retryAfterSecs: 600,
      note: expect.stringMatching(/^requeued: the model budget is used up/),
    });
  });

  it("leaves silence for a person and believes task_fail", () => {
    expect(attest(clean({ report: undefined })).state).toBe("needs-review");
    expect(attest(clean({ report: { status: "failed", note: "no access" } }))).toMatchObject({
      state: "failed",
      note: "no access",
    });
  });

  it("holds a completed task while a proposal it filed is unresolved, then settles it", () => {
    const pending = attest(clean({ gates: [gate("g-1", "pending"), gate("g-2", "executed")] }));
    expect(pending).toMatchObject({
      state: "needs-review",
      note: "needs-review: reported complete, waiting on its proposal g-1 (send-email) is pending",
    });
    const broken = attest(clean({ gates: [gate("g-1", "failed", { error: "smtp down" })] }));
    expect(broken.state).toBe("needs-review");
    expect(broken.note).toContain("failed to execute: smtp down (approve it again or deny it)");
    expect(attest(clean({ gates: [gate("g-1", "executed")] }))).toMatchObject({
      state: "done",
      note: "summary written",
    });
    expect(
      attest(clean({ gates: [gate("g-1", "denied", { decision_note: "not to customers" })] })),
    ).toMatchObject({
      state: "failed",
      note: "failed: reported complete, but its proposal g-1 (send-email) was denied: not to customers",
    });
  });

  it("a refused run fails even while its proposals are pending", () => {
    expect(attest(clean({ ...ended("ceiling"), gates: [gate("g-1", "pending")] })).state).toBe(
      "failed",
    );
  });
});

describe("refusedModelCall", () => {
  const call = (status: number, extra: Partial<DecisionRecord> = {}): DecisionRecord => ({
    decision_id: "d",
    ts: "2026-12-01T00:00:00Z",
    verdict: "allow",
    rule: "model:openai",
    subject: "org/elf",
    run_id: "run-1",
    status,
    request: {
      protocol: "https",
      method: "POST",
      host: "models.test",
      port: 443,
      path: "/v1/chat/completions",
      query: "",
      headers: {},
      bodySize: 0,
      mcp: null,
    },
    ...extra,
  });
  const action = call(200, {
    request: { ...call(200).request, host: "roster.actions", path: "/v1/outcome" },
  });

  it("looks at the run's last model call, not at other requests after it", () => {
    expect(refusedModelCall([call(200, { outcome: "complete" }), action])).toBeUndefined();
    expect(
      refusedModelCall([call(402, { budget: { detail: "d", retry_after_secs: 1 } }), action]),
    ).toBe("refused at models.test: the model budget is used up (d)");
    expect(refusedModelCall([call(403, { verdict: "deny", rule: null })])).toBe(
      "refused by the gateway at models.test (403: no rule allows it)",
    );
    expect(refusedModelCall([call(429, { outcome: "complete" })])).toBe(
      "answered 429 by the model provider at models.test",
    );
    // a refusal the engine got past is no ending
    expect(refusedModelCall([call(402), call(200, { outcome: "complete" })])).toBeUndefined();
  });
});
