import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { errorMessage, RosterError } from "../../ground/errors.ts";
import { replaceFileSync } from "../../ground/files/atomic-replace.ts";

/**
 * A paused worker starts no box until resumed: no run, no task, no chat
 * turn, no ready box (work/runs/start-4-box.ts asks here before anything
 * starts). One file per worker, state/paused/<worker>.json, written whole;
 * one that can't be read keeps the worker paused, so a damaged file never
 * lets one run that someone stopped.
 */
export interface Pause {
  by: string;
  at: string;
  reason?: string;
}

const pauseFile = (paths: RosterPaths, worker: string) =>
  join(paths.state, "paused", `${worker}.json`);

export function pauseOf(paths: RosterPaths, worker: string): Pause | undefined {
  let text: string;
  try {
    text = readFileSync(pauseFile(paths, worker), "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    return { by: "?", at: "?", reason: `the pause record can't be read: ${errorMessage(error)}` };
  }
  try {
    const value = JSON.parse(text) as Partial<Pause>;
    if (typeof value.by === "string" && typeof value.at === "string")
      return { by: value.by, at: value.at, ...(value.reason ? { reason: value.reason } : {}) };
  } catch {
    // said below
  }
  return { by: "?", at: "?", reason: `${pauseFile(paths, worker)} is not a pause record` };
}

export function pauseWorker(
  paths: RosterPaths,
  worker: string,
  by: string,
  reason?: string,
): Pause {
  const pause: Pause = { by, at: new Date().toISOString(), ...(reason ? { reason } : {}) };
  mkdirSync(join(paths.state, "paused"), { recursive: true, mode: 0o755 });
  replaceFileSync(pauseFile(paths, worker), `${JSON.stringify(pause)}\n`, { mode: 0o644 });
  return pause;
}

/** Whether there was a pause to lift. */
export function resumeWorker(paths: RosterPaths, worker: string): boolean {
  const was = pauseOf(paths, worker) !== undefined;
  rmSync(pauseFile(paths, worker), { force: true });
  return was;
}

export function pauseSaid(worker: string, pause: Pause): string {
  return `${worker} is paused (by ${pause.by} at ${pause.at}${pause.reason ? `: ${pause.reason}` : ""}); roster worker resume ${worker} lets it run`;
}

/** Refuses to start a box of a paused worker, saying who paused it and how to resume. */
export function assertNotPaused(paths: RosterPaths, worker: string): void {
  const pause = pauseOf(paths, worker);
  if (pause) throw new RosterError(pauseSaid(worker, pause), { exitCode: 2 });
}
