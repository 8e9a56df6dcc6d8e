import type { RosterPaths } from "../../ground/config/paths.ts";
import { workerOfSubject } from "../../ground/config/subject.ts";
import type { Gate } from "../../records/gates/gate-record.ts";
import { type Task, updateList } from "../../records/task-list/store.ts";
import { type Attestation, attest } from "./attest.ts";
import { runFacts } from "./run-facts.ts";

/**
 * Where a task is settled from its run, on every path: the dispatcher when
 * the run ends, a server start for runs that died with the last server, and
 * the approval desk when a proposal the run filed is resolved. The facts are
 * gathered and judged (attest.ts) inside the task list's lock, so a gate
 * resolving at the same moment is seen by one of the two settlements.
 */
export interface Settled {
  task: Task;
  attestation: Attestation;
}

export async function settleFromRun(
  paths: RosterPaths,
  worker: string,
  runId: string,
  /** Which task: the one this run had, in the state the caller expects it in. */
  which: (task: Task) => boolean,
  options: { serverStopping?: boolean } = {},
): Promise<Settled | undefined> {
  let settled: Settled | undefined;
  await updateList(
    paths,
    worker,
    (current) => {
      const task = current.tasks.find(which);
      if (!task) return undefined;
      const attestation = attest(runFacts(paths, worker, runId, options));
      if (attestation.state === task.state && attestation.note === task.note) return undefined;
      const next: Task = {
        ...task,
        state: attestation.state,
        ...(attestation.state === "pending" ? {} : { finished_at: new Date().toISOString() }),
        ...(attestation.note ? { note: attestation.note } : {}),
      };
      settled = { task: next, attestation };
      return {
        tasks: current.tasks.map((one) => (one === task ? next : one)),
        recurring: current.recurring ?? [],
      };
      // the task being settled is live (claimed, or held for review): no history is read
    },
    { finished: false },
  );
  return settled;
}

/**
 * A proposal was resolved (executed, denied, or failed to execute): the task
 * of the run that filed it, held as needs-review for it, is judged again.
 */
export async function settleAfterGate(
  paths: RosterPaths,
  gate: Pick<Gate, "worker" | "run_id">,
): Promise<Settled | undefined> {
  const runId = gate.run_id;
  if (!runId) return undefined;
  return settleFromRun(
    paths,
    workerOfSubject(gate.worker),
    runId,
    (task) => task.run_id === runId && task.state === "needs-review",
  );
}
