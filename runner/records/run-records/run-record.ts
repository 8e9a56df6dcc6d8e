import { randomUUID } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { errorMessage, RosterError } from "../../ground/errors.ts";
import { replaceFile } from "../../ground/files/atomic-replace.ts";

/**
 * The permanent record of a run: state/runs/<worker>/<run-id>/run.json, always
 * written whole (temp file + rename) so a reader never sees half a record.
 * `ended_by` values are stable names: logs and tools key on them.
 */
/** A repo's line in the run record; `state` ends as pushed, unchanged, quarantined or backstop-failed. */
export interface RepoRecord {
  base_commit: string;
  mode: "write";
  state: "active" | "pushed" | "unchanged" | "quarantined" | "backstop-failed";
  produced_commit?: string;
  quarantine_ref?: string;
  error?: string;
  /** The clone's refs when it was made (repos/clone-refs.ts): unchanged after the run, nothing to back up. */
  refs?: string;
}

export type RunState = "running" | "done" | "failed";
/**
 * `crash`: the runner itself died mid-run; a later start found the record and finished it.
 * `stalled`: no sign of life for `[box] stall_after`. `budget`: the model was refused by a
 * used-up budget and the run stopped there. `output`: the box wrote past a bound on what
 * the host reads from it (a line of pi's events, or `[box] max_output` on a stream).
 */
export type EndedBy =
  | "exit"
  | "ceiling"
  | "signal"
  | "idle"
  | "error"
  | "crash"
  | "stalled"
  | "disk"
  | "output"
  | "budget";

export interface RunRecord {
  id: string;
  worker: string;
  kind: "box" | "task" | "session" | "exec";
  state: RunState;
  started_at: string;
  ended_at?: string;
  ended_by?: EndedBy;
  exit_code?: number;
  error?: string;
  ceiling_min?: number;
  container?: string;
  /** Sessions: the channel they serve and how many turns they ran. */
  channel_id?: string;
  turns?: number;
  /** Task runs: the task they ran. */
  task_id?: string;
  /** Gated repos the run had a clone of, and what became of its commits there. */
  repos?: Record<string, RepoRecord>;
  /** The process that governs the run: if it is gone while the record says running, the run crashed. */
  runner_pid?: number;
  /** The digest of the config the run was started under (kept in data/config-history/). */
  config?: string;
  /**
   * An engine run's agent, when it is not pi: its events.jsonl is that
   * agent's own stream, a session's from its streaming mode (Codex's app-server).
   */
  agent?: "claude" | "codex";
  /**
   * The box sent its credential sentinel where no credential replaces it, and
   * the gateway refused it (rule `sentinel-leak`): how often, and the first
   * time and host. Copied from the gateway's mark when the run ends.
   */
  sentinel_leak?: SentinelLeak;
  /** Only between the run's answer and its bookkeeping (pending-end.ts): what is left to do. */
  pending?: PendingBookkeeping;
  /** When the bookkeeping after the answer (`ended_at`) was done: the store snapshot taken. */
  settled_at?: string;
}

/**
 * A run that has answered and whose store snapshot is not taken yet: written
 * with the record's end before the answer goes out, so a server that dies in
 * between leaves what its next start needs to take the snapshot.
 */
export interface PendingBookkeeping {
  /** The run's `[store]` limits for that snapshot: max_size in bytes, and the reserve. */
  store: { max_bytes: number; reserve: number };
}

/** What a run's record keeps of the sentinel tripwire (the gateway's audit/tripwires/<run>.json). */
export interface SentinelLeak {
  count: number;
  first_at: string;
  first_host: string;
  last_at: string;
}

/**
 * UTC timestamp + a hex suffix: sorts by time, unique without coordination.
 * The suffix is the millisecond (3 hex digits, 000–3e7), so runs started
 * within one second still list newest first, then 8 random ones.
 */
export function newRunId(now = new Date()): string {
  const stamp = now.toISOString().slice(0, 19).replace(/[:T]/g, "-");
  const ms = now.getUTCMilliseconds().toString(16).padStart(3, "0");
  return `${stamp}-${ms}${randomUUID().replace(/-/g, "").slice(0, 8)}`;
}

export function runDir(stateRoot: string, worker: string, id: string): string {
  return join(stateRoot, "runs", worker, id);
}

export async function writeRecord(dir: string, record: RunRecord): Promise<void> {
  const file = join(dir, "run.json");
  try {
    await mkdir(dir, { recursive: true });
    await replaceFile(file, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o644 });
  } catch (error) {
    // the record as it was stays whole; say which file could not be written, and why
    throw new RosterError(`could not write the run record ${file}: ${errorMessage(error)}`, {
      cause: error,
    });
  }
}

export function readRecord(dir: string): RunRecord | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, "run.json"), "utf8")) as RunRecord;
  } catch {
    return undefined;
  }
}

/** Finishes a record: anything but a clean exit or an idle end is a failure, as is a non-zero exit. */
export function finished(
  record: RunRecord,
  endedBy: EndedBy,
  exitCode?: number,
  error?: string,
): RunRecord {
  const failed = (endedBy !== "exit" && endedBy !== "idle") || (exitCode ?? 0) !== 0;
  return {
    ...record,
    state: failed ? "failed" : "done",
    ended_at: new Date().toISOString(),
    ended_by: endedBy,
    ...(exitCode !== undefined ? { exit_code: exitCode } : {}),
    ...(error ? { error } : {}),
  };
}

export interface RunLocation {
  worker: string;
  id: string;
  dir: string;
}

/** Every run directory, newest first. */
export function listRuns(stateRoot: string, worker?: string): RunLocation[] {
  const root = join(stateRoot, "runs");
  if (!existsSync(root)) return [];
  const workers = worker ? [worker] : readdirSync(root).sort();
  const out: RunLocation[] = [];
  for (const name of workers) {
    const dir = join(root, name);
    if (!existsSync(dir)) continue;
    for (const id of readdirSync(dir)) {
      if (existsSync(join(dir, id, "run.json"))) out.push({ worker: name, id, dir: join(dir, id) });
    }
  }
  return out.sort((a, b) => b.id.localeCompare(a.id));
}

/** A run by any unique prefix of its id. */
export function findRun(stateRoot: string, prefix: string): RunLocation | { error: string } {
  const matches = listRuns(stateRoot).filter((run) => run.id.startsWith(prefix));
  if (matches.length === 1 && matches[0]) return matches[0];
  if (matches.length === 0) return { error: `no run matches "${prefix}"` };
  return {
    error: `"${prefix}" matches ${matches.length} runs: ${matches
      .slice(0, 5)
      .map((m) => m.id)
      .join(", ")}…`,
  };
}
