import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { spentSince, windowStart } from "../../boundary/gateway/spend/budget.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { workerSubject } from "../../ground/config/subject.ts";
import { columns } from "../../ground/text/table.ts";
import { liveRecords } from "../../records/run-records/live-runs.ts";
import { listRuns, readRecord } from "../../records/run-records/run-record.ts";
import { readLive } from "../../records/task-list/store.ts";
import { type Pause, pauseOf } from "../../records/workers/pause.ts";

/**
 * `roster worker ls`: every worker on one screen — running or idle, its last
 * finished run and how it ended, the tasks waiting for it, its open chat
 * sessions and what it has spent today (the budget's day window, UTC). Read
 * from the records alone: no server, no gateway, no engine needed.
 */
export interface WorkerRow {
  name: string;
  state: "running" | "idle";
  /** Its live runs: `<id> (<kind>)`. */
  live: Array<{ id: string; kind: string }>;
  last_run: {
    id: string;
    kind: string;
    state: string;
    ended_by: string | null;
    ended_at: string | null;
  } | null;
  /** Pending tasks on its list. */
  queued: number;
  /** Chat sessions with a live box. */
  sessions: number;
  /** Spent since the start of today's budget window, per currency (tokens, usd, …). */
  spent_today: Record<string, number>;
  /** Paused: no box of it starts until resumed. */
  paused: Pause | null;
}

/** The workers the config declares: each folder of workers/ with a worker.toml, by name. */
export function configuredWorkers(paths: RosterPaths): string[] {
  const dir = join(paths.config, "workers");
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(dir, entry.name, "worker.toml")))
    .map((entry) => entry.name)
    .sort();
}

export function workerRow(paths: RosterPaths, name: string, now = Date.now()): WorkerRow {
  const live = liveRecords(paths, name);
  const liveIds = new Set(live.map((record) => record.id));
  const last = listRuns(paths.state, name)
    .filter((run) => !liveIds.has(run.id))
    .map((run) => readRecord(run.dir))
    .find((record) => record !== undefined && record.state !== "running");
  return {
    name,
    state: live.length ? "running" : "idle",
    live: live.map((record) => ({ id: record.id, kind: record.kind })),
    last_run: last
      ? {
          id: last.id,
          kind: last.kind,
          state: last.state,
          ended_by: last.ended_by ?? null,
          ended_at: last.ended_at ?? null,
        }
      : null,
    queued: readLive(paths, name).tasks.filter((task) => task.state === "pending").length,
    sessions: live.filter((record) => record.kind === "session").length,
    spent_today: spentSince(paths.audit, workerSubject(name), windowStart("day", now)),
    paused: pauseOf(paths, name) ?? null,
  };
}

export function workerRows(paths: RosterPaths, now = Date.now()): WorkerRow[] {
  return configuredWorkers(paths).map((name) => workerRow(paths, name, now));
}

const spentText = (spent: Record<string, number>) =>
  Object.entries(spent)
    .map(([currency, amount]) =>
      currency === "usd"
        ? `$${amount.toFixed(4)}`
        : `${Number.isInteger(amount) ? amount : amount.toFixed(4)} ${currency}`,
    )
    .join(", ") || "-";

export function formatWorkerRows(rows: WorkerRow[]): string {
  if (rows.length === 0) return "no workers (roster worker add <name> makes one)";
  const header = [
    "WORKER",
    "STATE",
    "LAST RUN (UTC)",
    "OUTCOME",
    "QUEUED",
    "SESSIONS",
    "SPENT TODAY",
  ];
  const lines = rows.map((row) => [
    row.name,
    row.live.length
      ? `running (${row.live.map((run) => run.kind).join(", ")})`
      : row.paused
        ? `paused by ${row.paused.by}`
        : "idle",
    row.last_run?.ended_at?.slice(0, 16).replace("T", " ") ?? "-",
    row.last_run
      ? `${row.last_run.kind} ${row.last_run.state}${row.last_run.ended_by ? ` (${row.last_run.ended_by})` : ""}`
      : "-",
    String(row.queued),
    String(row.sessions),
    spentText(row.spent_today),
  ]);
  return columns([header, ...lines]);
}
