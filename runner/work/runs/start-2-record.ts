import { boxContainerName } from "../../boundary/box/layout.ts";
import { withStartLock } from "../../boundary/store/start-lock.ts";
import type { AgentKind } from "../../ground/config/agent-schema.ts";
import { type RunRecord, writeRecord } from "../../records/run-records/run-record.ts";
import { runAgent } from "./agent-command.ts";
import type { EngineDrive } from "./engine-prompt.ts";
import type { RunRequest } from "./run-request.ts";
import type { Provisioned } from "./start-1-provision.ts";
import { type BoxStart, newBoxStart, readyStart } from "./start-4-box.ts";

/**
 * Phase 2 of a run's start (run.ts names the four): the record the run starts
 * with, written under the store's start lock, and the checks before it.
 */

/** A run between its first record and its running box: what a failure must give back, and its record. */
export interface Starting extends BoxStart {
  record: RunRecord;
}

export function engineOf(request: RunRequest): EngineDrive | undefined {
  return "engine" in request.drive ? request.drive.engine : undefined;
}

/**
 * The record a run starts with; a session's ceiling is its worker's. A ready
 * box's start is taken over as far as it came: it was made for a run id of its
 * own, and its folder, token, door and box are this run's now.
 */
export function firstRecord(request: RunRequest, box: Provisioned): Starting {
  const engine = engineOf(request);
  const { worker } = box;
  const start = request.ready ? readyStart(request.ready) : newBoxStart(request.paths, box);
  const { id } = start;
  return {
    ...start,
    record: {
      id,
      worker: worker.name,
      kind: request.kind,
      state: "running",
      started_at: new Date().toISOString(),
      ceiling_min: request.ceiling_min ?? worker.box.session_ceiling_min,
      container: boxContainerName(id),
      runner_pid: process.pid,
      config: box.configDigest,
      ...agentOfRun(engine ? runAgent(worker, engine.mode) : "pi"),
      ...(engine?.taskId ? { task_id: engine.taskId } : {}),
      ...(engine?.session ? { channel_id: engine.session.channel, turns: 0 } : {}),
    },
  };
}

/** The record names an engine run's agent when it is not pi (its events.jsonl is that agent's). */
const agentOfRun = (agent: AgentKind): Pick<RunRecord, "agent"> =>
  agent === "pi" ? {} : { agent };

/** How long a start waits for a restore of its worker's store: two passes at their deadline, and more. */
const START_WAITS_FOR_RESTORE_MS = 25 * 60_000;

/**
 * Writes the run's first record under the worker's start lock (store/start-lock.ts):
 * once written the run is live and a restore refuses; while a restore copies,
 * the start waits for it. Every start, a ready box's hand-off included, passes here.
 */
export async function writeStartRecord(request: RunRequest, starting: Starting): Promise<void> {
  await withStartLock(
    request.paths,
    starting.record.worker,
    "start",
    {
      waitMs: START_WAITS_FOR_RESTORE_MS,
      signal: request.signal,
      onWait: () =>
        request.note(
          `${starting.record.worker}'s store is being restored: the run starts once it is done`,
        ),
    },
    () => {
      // a start that waited for a restore began once it was done (--before reads this)
      starting.record = { ...starting.record, started_at: new Date().toISOString() };
      return writeRecord(starting.dir, starting.record);
    },
  );
}

export function commandOf(drive: RunRequest["drive"]): string[] {
  if ("command" in drive) return drive.command;
  throw new Error("an engine run needs its compiled prompt");
}
