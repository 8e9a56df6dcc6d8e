import { askHealth } from "../../boundary/gateway/process/health.ts";
import type { ConfigStatus } from "../../boundary/gateway/settings/config-source.ts";
import { shortDigest } from "../../ground/config/config-digest.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { rosterVersionLine } from "../../ground/version.ts";
import { listRuns, readRecord } from "../../records/run-records/run-record.ts";
import { allTasks } from "../../records/task-list/store.ts";
import type { ReadyEntry } from "../../work/ready/pool.ts";
import { readReadyStatus } from "../../work/ready/server-pool.ts";
import { type ListenerStatus, readListenerStatuses } from "../listeners/supervisor.ts";
import { readServerState } from "./state.ts";

/**
 * `roster server status`: is a server running for this deployment, does its
 * gateway answer, and what is it doing (boxes by kind, tasks waiting).
 */
export interface ServerStatus {
  running: boolean;
  pid?: number;
  started_at?: string;
  cap?: number;
  /** The version and commit the server was started from, and this checkout's: they differ when the server runs older code. */
  version?: { server: string | undefined; here: string };
  gateway?: { port: number; addrs: string[]; healthy: boolean };
  /** The config the gateway judges by, and the one it refused (its /healthz). */
  config?: ConfigStatus;
  runs: Array<{ id: string; worker: string; kind: string; started_at: string; detail: string }>;
  queued: number;
  listeners: ListenerStatus[];
  /** Boxes started before their run (docs/ready-boxes.md). */
  ready: ReadyEntry[];
}

export async function serverStatus(paths: RosterPaths): Promise<ServerStatus> {
  const state = readServerState(paths);
  const queued = allTasks(paths, undefined, { live: true }).filter(
    (task) => task.state === "pending",
  ).length;
  if (!state) return { running: false, runs: [], queued, listeners: [], ready: [] };
  const health = await askHealth(state.gateway.port, 2_000);
  const runs = listRuns(paths.state)
    .map((run) => readRecord(run.dir))
    .filter((record) => record?.state === "running" && record.runner_pid === state.pid)
    .flatMap((record) =>
      record
        ? [
            {
              id: record.id,
              worker: record.worker,
              kind: record.kind,
              started_at: record.started_at,
              detail: record.task_id
                ? `task:${record.task_id}`
                : record.channel_id
                  ? `channel:${record.channel_id}`
                  : "-",
            },
          ]
        : [],
    );
  return {
    running: true,
    pid: state.pid,
    started_at: state.started_at,
    cap: state.cap,
    version: { server: state.version, here: rosterVersionLine() },
    gateway: { ...state.gateway, healthy: health !== undefined },
    ...(health?.config ? { config: health.config } : {}),
    runs,
    queued,
    listeners: readListenerStatuses(paths),
    ready: readReadyStatus(paths),
  };
}

export function formatStatus(status: ServerStatus): string {
  if (!status.running)
    return `no server running (${status.queued} task(s) queued; roster server start runs them)\n`;
  const lines = [
    `server pid ${status.pid}, up since ${status.started_at}, up to ${status.cap} boxes`,
    ...versionLines(status.version),
    `gateway port ${status.gateway?.port} on ${status.gateway?.addrs.join(", ")}: ${status.gateway?.healthy ? "answering" : "NOT ANSWERING"}`,
    ...configLines(status.config),
    `boxes: ${status.runs.length} running, ${status.queued} task(s) queued`,
    ...status.runs.map((run) => `  ${run.id}  ${run.worker}  ${run.kind}  ${run.detail}`),
    `ready boxes: ${status.ready.length}${status.ready.length ? " (each holds no run until one is handed to it)" : ""}`,
    ...status.ready.map(
      (box) =>
        `  ${box.run}  ${box.worker}  made ${box.made_at}${box.memory_bytes !== undefined ? `  ${(box.memory_bytes / 1024 / 1024).toFixed(0)} MiB` : ""}`,
    ),
    `listeners: ${status.listeners.length || "none bound"}`,
    ...status.listeners.map(
      (l) =>
        `  ${l.worker}/${l.platform} (bot "${l.credential}"): ${l.state} since ${l.since}${l.detail ? ` — ${l.detail}` : ""}${l.last_event ? `; last event ${l.last_event}` : ""}${l.restarts ? `; ${l.restarts} restart(s)` : ""}`,
    ),
  ];
  return `${lines.join("\n")}\n`;
}

/** Which config the door judges by; a refused one, and every problem it was refused for. */
function configLines(config: ConfigStatus | undefined): string[] {
  if (!config) return [];
  const { live, refused } = config;
  return [
    `config ${shortDigest(live.digest)} live since ${live.taken_at}${live.usable ? "" : `: UNUSABLE, ${live.reason ?? "everything is denied"}`}`,
    ...(refused
      ? [
          `config ${shortDigest(refused.digest)} REFUSED at ${refused.at} (the door keeps judging by ${shortDigest(live.digest)}):`,
          ...refused.problems.map((problem) => `  ${problem}`),
          ...(refused.more ? [`  (and ${refused.more} more)`] : []),
        ]
      : []),
  ];
}

/** The server's version, and a word when this checkout has moved on since it started. */
function versionLines(version: ServerStatus["version"]): string[] {
  if (!version) return [];
  if (!version.server)
    return [
      `roster ${version.here} here; the server was started by an older roster that records no version`,
    ];
  return version.server === version.here
    ? [`roster ${version.server}`]
    : [
        `roster ${version.server}, but this checkout is ${version.here}: restart the server to run it`,
      ];
}
