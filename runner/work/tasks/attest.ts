import type { Gate } from "../../records/gates/gate-record.ts";
import type { RunRecord } from "../../records/run-records/run-record.ts";
import type { TaskState } from "../../records/task-list/store.ts";
import { type BudgetStop, describeBudgetStop } from "../runs/budget-stop.ts";

/**
 * Host-attested outcomes: how a task ended is the host's call, not the
 * run's. The run's report (task_complete / task_fail) is one fact among what
 * the host saw itself — how the run ended (its record), what the gateway
 * answered its last model call (the audit), and the proposals it filed (its
 * gates). The rules, first match wins:
 *
 * 1. The server stopped the run; or, before it reported, the server died
 *    under it (or left no record of it) or a used-up budget stopped it: the
 *    task goes back to the queue (it may run again; nothing says it is finished).
 * 2. The run crashed (its runner died, its engine exited non-zero, the box
 *    was lost), hit its ceiling, stalled, was killed, or ended right after
 *    its last model call was refused: failed, whatever it reported.
 * 3. It ended without a report: needs-review (it may have acted; a person looks).
 * 4. It reported task_fail: failed.
 * 5. It reported task_complete: done once every proposal it filed is
 *    resolved and none was denied; failed when one was denied (what it
 *    called complete leaned on something a person refused); needs-review
 *    while any is pending, or was approved but failed to execute (approve it
 *    again to retry, or deny it). The desk settles the task when the last
 *    one resolves.
 *
 * Pure: every fact comes in, one decision goes out (run-facts.ts gathers them).
 */
export interface Report {
  status: "completed" | "failed";
  note: string;
}

export interface RunFacts {
  runId: string;
  /** The run's record as it was finished (undefined: none was found). */
  record: Pick<RunRecord, "id" | "ended_by" | "exit_code" | "ceiling_min" | "error"> | undefined;
  /** The run's own report. */
  report: Report | undefined;
  /** Why its last model call got no answer (run-decisions.ts), when it got none. */
  refusedModelCall: string | undefined;
  /** A used-up budget is why it stopped (the gateway's audit says). */
  budget: BudgetStop | undefined;
  /** The proposals the run filed. */
  gates: Array<Pick<Gate, "id" | "intent" | "state" | "decision_note" | "error">>;
  /** The server stopped it (SIGTERM, `server stop`): an interruption, not an ending. */
  serverStopping: boolean;
}

export interface Attestation {
  state: TaskState;
  /** One line: the run's own words when the host agrees with them, otherwise the host's, saying why. */
  note: string;
  /** The words of the server's log line. */
  said: string;
  /** Requeued by a used-up budget: not started again before this many seconds. */
  retryAfterSecs?: number;
}

const NOTE_MAX = 160;
const clip = (text: string) => {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > NOTE_MAX ? `${line.slice(0, NOTE_MAX - 1)}…` : line;
};

export function attest(facts: RunFacts): Attestation {
  const { record, report } = facts;
  const endedBy = record?.ended_by;
  if (endedBy === "signal" && facts.serverStopping)
    return {
      state: "pending",
      note: "requeued: the server stopped during its run",
      said: "requeued (server stopping)",
    };
  if ((endedBy === "crash" || !record) && !report)
    return {
      state: "pending",
      note: `requeued: run ${facts.runId} ${record ? "crashed" : "left no record"}`,
      said: "requeued (its run crashed)",
    };
  if (endedBy === "budget" && !report && facts.budget)
    return {
      state: "pending",
      note: `requeued: ${describeBudgetStop(facts.budget)}`,
      said: "requeued until its budget resets",
      retryAfterSecs: facts.budget.retryAfterSecs,
    };

  const failure = runFailure(facts);
  if (failure) {
    const after = report
      ? ` after reporting ${report.status === "completed" ? "complete" : "failure"}${report.note ? ` ("${clip(report.note)}")` : ""}`
      : "";
    return failed(`failed: ${failure}${after}`);
  }
  if (!report)
    return {
      state: "needs-review",
      note: "needs-review: the run ended without reporting task_complete or task_fail",
      said: "needs-review",
    };
  if (report.status === "failed") return { ...failed(report.note), said: "failed" };
  return gated(facts.gates, report);
}

/** Why the run itself failed, whatever it reported; undefined when it ended well. */
function runFailure(facts: RunFacts): string | undefined {
  const record = facts.record;
  if (!record) return "the run left no record";
  switch (record.ended_by) {
    case "crash":
      return "its runner died mid-run (the server crashed or was killed)";
    case "ceiling":
      return `the run hit its ${record.ceiling_min ?? "?"}-minute ceiling`;
    case "stalled":
      return "the run stalled (no sign of life for [box] stall_after)";
    case "disk":
      return `the run was stopped for the disk: ${record.error ?? "its store outgrew its limit"}`;
    case "output":
      return `the run was stopped for its output: ${record.error ?? "it wrote past a bound"}`;
    case "budget":
      return facts.budget
        ? `its model call was refused at ${facts.budget.host}: the model budget is used up (${facts.budget.detail})`
        : "its model call was refused: the model budget is used up";
    case "signal":
      return "the run was killed before it ended";
    case "error":
      return `the run broke off: ${record.error ?? "the box was lost"}`;
    case undefined:
      return "the run never finished";
    default:
      break;
  }
  if (facts.refusedModelCall) return `its last model call was ${facts.refusedModelCall}`;
  if ((record.exit_code ?? 0) !== 0)
    return `the run crashed (its engine exited ${record.exit_code})`;
  return undefined;
}

function gated(gates: RunFacts["gates"], report: Report): Attestation {
  const open = gates.filter((gate) => gate.state !== "executed" && gate.state !== "denied");
  const denied = gates.filter((gate) => gate.state === "denied");
  const name = (gate: RunFacts["gates"][number]) => `${gate.id} (${gate.intent})`;
  if (open.length) {
    const waiting = open.map((gate) =>
      gate.state === "failed"
        ? `${name(gate)} failed to execute: ${clip(gate.error ?? "unknown error")} (approve it again or deny it)`
        : `${name(gate)} is ${gate.state}`,
    );
    return {
      state: "needs-review",
      note: clip(
        `needs-review: reported complete, waiting on its proposal${open.length > 1 ? "s" : ""} ${waiting.join("; ")}${denied.length ? `; denied: ${denied.map(name).join(", ")}` : ""}`,
      ),
      said: "needs-review (proposals pending)",
    };
  }
  if (denied.length) {
    const first = denied[0];
    const because = denied.length === 1 && first?.decision_note ? `: ${first.decision_note}` : "";
    return failed(
      clip(
        `failed: reported complete, but its proposal${denied.length > 1 ? "s" : ""} ${denied.map(name).join(", ")} ${denied.length > 1 ? "were" : "was"} denied${because}`,
      ),
    );
  }
  return { state: "done", note: report.note, said: "done" };
}

function failed(note: string): Attestation {
  return { state: "failed", note, said: "failed" };
}
