import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { listGates } from "../../records/gates/gate-record.ts";
import { readRecord, runDir } from "../../records/run-records/run-record.ts";
import { budgetStopIn } from "../runs/budget-stop.ts";
import { refusedModelCall, runDecisions } from "../runs/run-decisions.ts";
import type { Report, RunFacts } from "./attest.ts";

/**
 * What the host knows of a finished task run, gathered for attest.ts: its
 * record (written by the runner), its report (outcome.json, kept by the
 * action host beside the record), the gateway's audit of its model calls, and
 * the gates it filed. Synchronous reads only, so a caller can gather and
 * decide inside the task list's lock (a gate resolving meanwhile is then seen
 * by one side or the other, never by neither).
 */
export function readReport(paths: RosterPaths, worker: string, runId: string): Report | undefined {
  try {
    const parsed = JSON.parse(
      readFileSync(join(runDir(paths.state, worker, runId), "outcome.json"), "utf8"),
    ) as Partial<Report>;
    if (parsed.status === "completed" || parsed.status === "failed")
      return { status: parsed.status, note: String(parsed.note ?? "") };
  } catch {
    // no report (or an unreadable one): the run did not say
  }
  return undefined;
}

export function runFacts(
  paths: RosterPaths,
  worker: string,
  runId: string,
  options: { serverStopping?: boolean } = {},
): RunFacts {
  const decisions = runDecisions(paths.audit, runId);
  return {
    runId,
    record: readRecord(runDir(paths.state, worker, runId)),
    report: readReport(paths, worker, runId),
    refusedModelCall: refusedModelCall(decisions),
    budget: budgetStopIn(decisions),
    gates: listGates(paths, worker).filter((gate) => gate.run_id === runId),
    serverStopping: options.serverStopping ?? false,
  };
}
