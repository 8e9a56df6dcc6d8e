import type { WriteStream } from "node:fs";
import { boxContainerName } from "../box/layout.ts";
import { ceilingProblem } from "../config/ceiling.ts";
import type { WorkerView } from "../config/load.ts";
import { RosterError } from "../errors.ts";
import type { EngineDrive } from "./engine-prompt.ts";
import { newRunId, type RunRecord, runDir } from "./run-record.ts";
import type { RunRequest } from "./run-request.ts";

/** The run owner's (run.ts) first steps: the record it starts with, and the checks before it. */
export function refuse(message: string, exitCode = 2): RosterError {
  return new RosterError(message, { exitCode });
}

/** A run between its first record and its running box: what a failure must give back. */
export interface Starting {
  id: string;
  dir: string;
  record: RunRecord;
  token: string | undefined;
  /** Its own door is open at the gateway (closed again if the start fails). */
  door: boolean;
  logs: WriteStream[];
}

export function engineOf(request: RunRequest): EngineDrive | undefined {
  return "engine" in request.drive ? request.drive.engine : undefined;
}

/** The record a run starts with; a session's ceiling is its worker's. */
export function firstRecord(request: RunRequest, worker: WorkerView, readyId?: string): Starting {
  const engine = engineOf(request);
  const { paths } = request;
  // a ready box was made for a run id of its own: its folder and door are named after it
  const id = readyId ?? newRunId();
  return {
    id,
    dir: runDir(paths.state, worker.name, id),
    token: undefined,
    door: false,
    logs: [],
    record: {
      id,
      worker: worker.name,
      kind: request.kind,
      state: "running",
      started_at: new Date().toISOString(),
      ceiling_min: request.ceiling_min ?? worker.box.session_ceiling_min,
      container: boxContainerName(id),
      runner_pid: process.pid,
      ...(engine?.taskId ? { task_id: engine.taskId } : {}),
      ...(engine?.session ? { channel_id: engine.session.channel, turns: 0 } : {}),
    },
  };
}

export function assertCeiling(minutes: number): void {
  const problem = ceilingProblem(minutes);
  if (problem) throw refuse(problem);
}

export function commandOf(drive: RunRequest["drive"]): string[] {
  if ("command" in drive) return drive.command;
  throw new Error("an engine run needs its compiled prompt");
}

export function endStream(stream: WriteStream): Promise<void> {
  return new Promise((resolve) => stream.end(resolve));
}
