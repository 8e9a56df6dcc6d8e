import type { RosterPaths } from "../../ground/config/paths.ts";
import { processAlive } from "../../ground/files/process-alive.ts";
import { listRuns, type RunRecord, readRecord } from "./run-record.ts";

/**
 * Runs of a worker still going: their record says running and the process
 * that governs them lives (a record left running by a runner that died is a
 * crash the next start settles, not a live run). What refuses a restore or a
 * removal while a box of the worker writes its store, and what `worker ls`
 * calls running. A run that has answered and whose store snapshot is still
 * to be taken (`pending`) is live too: its store is not to be changed yet.
 */
export function liveRecords(paths: RosterPaths, worker: string): RunRecord[] {
  return listRuns(paths.state, worker).flatMap((run) => {
    const record = readRecord(run.dir);
    if (record?.state !== "running" && !record?.pending) return [];
    if (record.runner_pid !== undefined && !processAlive(record.runner_pid)) return [];
    return [record];
  });
}

/** The live runs, each as a person reads it: `<id> (<kind>[ in <channel>])`. */
export function liveRuns(paths: RosterPaths, worker: string): string[] {
  return liveRecords(paths, worker).map(
    (record) =>
      `${record.id} (${record.kind}${record.channel_id ? ` in ${record.channel_id}` : ""})`,
  );
}

/** The live runs of any worker in one channel (a session's box reads its folder). */
export function liveRunsIn(paths: RosterPaths, channel: string): string[] {
  const workers = new Set(listRuns(paths.state).map((run) => run.worker));
  return [...workers].flatMap((worker) =>
    liveRecords(paths, worker)
      .filter((record) => record.channel_id === channel)
      .map((record) => `${record.id} (${record.kind} of ${worker})`),
  );
}
