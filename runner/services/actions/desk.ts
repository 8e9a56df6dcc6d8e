import { existsSync, readFileSync, rmSync } from "node:fs";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { workerOfSubject } from "../../ground/config/subject.ts";
import { errorMessage, RosterError } from "../../ground/errors.ts";
import { replaceFileSync } from "../../ground/files/atomic-replace.ts";
import { appendJournal } from "../../records/journal/journal.ts";
import { newTaskId, type Task, updateTasks } from "../../records/task-list/store.ts";
import { settleAfterGate } from "../../work/tasks/settle-run.ts";
import { appendActionAudit } from "./action-audit.ts";
import { executorNamed } from "./executors/index.ts";
import {
  type Gate,
  readGate,
  resultMarker,
  sentPartsFile,
  TERMINAL,
  withGateLock,
  writeGate,
} from "./gates.ts";

/**
 * The approval desk: approve or deny a gate, and run an approved one exactly
 * once. The executor's result is written to a marker file before the gate is
 * marked executed, so a desk that crashes in between finds the marker on the
 * next approve and records the result instead of sending again. (A crash
 * between the far side accepting and the marker being written can still send
 * twice; the window is one local file write.) A resolved gate settles the
 * task of the run that filed it when that task was waiting on it.
 */
export interface Decision {
  by: string;
  note?: string;
}

export function executorFor(gate: Pick<Gate, "executor">) {
  return executorNamed(gate.executor);
}

export async function approveGate(
  paths: RosterPaths,
  gate: Gate,
  decision: Decision,
): Promise<Gate> {
  const worker = workerOfSubject(gate.worker);
  return withGateLock(paths, { worker, id: gate.id }, async () => {
    const current = readGate(paths, worker, gate.id) ?? gate;
    if (current.state === "executed") return current; // a second approve is a no-op, never a second send
    if (current.state === "denied")
      throw new RosterError(`gate ${gate.id} was denied; file a new proposal instead`, {
        exitCode: 2,
      });
    const approved: Gate = {
      ...current,
      state: "approved",
      decided_by: decision.by,
      decided_at: new Date().toISOString(),
      ...(decision.note ? { decision_note: decision.note } : {}),
    };
    delete approved.error;
    writeGate(paths, approved);
    appendJournal(paths, {
      worker,
      run_id: current.run_id,
      kind: "approved",
      intent: current.intent,
      gate_id: current.id,
      detail: { by: decision.by, ...(decision.note ? { note: decision.note } : {}) },
    });
    return execute(paths, approved);
  });
}

export async function denyGate(paths: RosterPaths, gate: Gate, decision: Decision): Promise<Gate> {
  const worker = workerOfSubject(gate.worker);
  return withGateLock(paths, { worker, id: gate.id }, async () => {
    const current = readGate(paths, worker, gate.id) ?? gate;
    if (TERMINAL.has(current.state) || current.state === "executing")
      throw new RosterError(
        `gate ${gate.id} is ${current.state}; only a pending or failed gate can be denied`,
        {
          exitCode: 2,
        },
      );
    const denied: Gate = {
      ...current,
      state: "denied",
      decided_by: decision.by,
      decided_at: new Date().toISOString(),
      ...(decision.note ? { decision_note: decision.note } : {}),
    };
    writeGate(paths, denied);
    appendJournal(paths, {
      worker,
      run_id: current.run_id,
      kind: "denied",
      intent: current.intent,
      gate_id: current.id,
      detail: { by: decision.by, ...(decision.note ? { note: decision.note } : {}) },
    });
    appendActionAudit(paths, { gate: denied, disposition: "denied" });
    await settleAfterGate(paths, denied);
    await wake(paths, denied);
    return denied;
  });
}

/** Runs an approved gate (its lock held by the caller) and records executed or failed. */
async function execute(paths: RosterPaths, approved: Gate): Promise<Gate> {
  const worker = workerOfSubject(approved.worker);
  const marker = resultMarker(paths, { worker, id: approved.id });
  const executing: Gate = { ...approved, state: "executing" };
  writeGate(paths, executing);
  let finished: Gate;
  try {
    const result = existsSync(marker)
      ? (JSON.parse(readFileSync(marker, "utf8")) as Record<string, unknown>)
      : await runExecutor(paths, executing);
    finished = { ...executing, state: "executed", executed_at: new Date().toISOString(), result };
  } catch (error) {
    finished = { ...executing, state: "failed", error: errorMessage(error) };
  }
  writeGate(paths, finished);
  appendJournal(paths, {
    worker,
    run_id: finished.run_id,
    kind: finished.state === "executed" ? "executed" : "failed",
    intent: finished.intent,
    gate_id: finished.id,
    detail: finished.state === "executed" ? finished.result : finished.error,
  });
  appendActionAudit(paths, {
    gate: finished,
    disposition: finished.state === "executed" ? "executed" : "failed",
  });
  // the task of the run that filed it may have been waiting on it (tasks/attest.ts)
  await settleAfterGate(paths, finished);
  await wake(paths, finished);
  return finished;
}

async function runExecutor(paths: RosterPaths, gate: Gate): Promise<Record<string, unknown>> {
  const executor = executorFor(gate);
  if (!executor) throw new Error(`no executor "${gate.executor}" in this roster`);
  const worker = workerOfSubject(gate.worker);
  const result = await executor.run(gate.payload, {
    paths,
    worker,
    key: gate.id,
    runId: gate.run_id,
  });
  const marker = resultMarker(paths, { worker, id: gate.id });
  replaceFileSync(marker, JSON.stringify(result), { mode: 0o600 });
  // the parts a chat send delivered matter only until the result is kept
  rmSync(sentPartsFile(paths, { worker, id: gate.id }), { force: true });
  return result;
}

export const CONTINUATION_CEILING_MIN = 15;

/** wake_on_resolve: a decided gate puts a short task on the worker's list to carry on from it. */
async function wake(paths: RosterPaths, gate: Gate): Promise<void> {
  if (!gate.wake_on_resolve) return;
  const worker = workerOfSubject(gate.worker);
  const outcome =
    gate.state === "executed"
      ? `was approved and executed (result: ${JSON.stringify(gate.result ?? {})})`
      : gate.state === "denied"
        ? `was denied${gate.decision_note ? `: ${gate.decision_note}` : ""}`
        : `was approved but failed: ${gate.error ?? "unknown error"}`;
  const task: Task = {
    id: newTaskId(),
    prompt: `Your proposal ${gate.id} (${gate.intent}) ${outcome}. Carry on with the work it was part of${gate.task_id ? ` (task ${gate.task_id})` : ""}; ~/self/journal has the details.`,
    ceiling_min: CONTINUATION_CEILING_MIN,
    state: "pending",
    filed_at: new Date().toISOString(),
    filed_by: `gate:${gate.id}`,
  };
  await updateTasks(paths, worker, (current) => [...current.tasks, task]);
  appendJournal(paths, {
    worker,
    run_id: gate.run_id,
    kind: "continuation-filed",
    intent: gate.intent,
    gate_id: gate.id,
    detail: { task_id: task.id },
  });
}
