/**
 * The logs part of `roster box doctor`: each log that grows with the
 * deployment (records/retention/logs.ts), what it holds now — its live
 * file, the files rotated out of it — and what `[retention]` keeps of it,
 * in words. A live file past twice its `max_file` means no sweep has run
 * for a while (the server sweeps at most once a minute, each run at its
 * start): that is a finding, as an engine that is down is.
 */
import { relative } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import type { RetentionSection } from "../../ground/config/retention.ts";
import type { RetentionPolicy } from "../../ground/files/rotation/rotate.ts";
import { formatByteSize } from "../../ground/text/byte-size.ts";
import type { LogStanding } from "../../records/retention/sweep.ts";

export interface DoctorLog {
  file: string;
  kind: LogStanding["kind"];
  liveBytes: number;
  rotatedFiles: number;
  rotatedBytes: number;
  maxFileBytes: number;
  rotateAfterMs: number;
  keepMs: number;
  keepBytes: number;
  floorMs: number;
  /** What retention keeps of it, as the text says it. */
  policy: string;
  /** The live file is past twice max_file: retention is not running. */
  overgrown: boolean;
}

export interface DoctorLogs {
  ok: boolean;
  totalBytes: number;
  logs: DoctorLog[];
  error?: string;
}

const DAY = 86_400_000;
const HOUR = 3_600_000;

/** 2592000000 → "30d", 43200000 → "12h": as `[retention]` writes ages. */
function age(ms: number): string {
  if (ms % DAY === 0) return `${ms / DAY}d`;
  if (ms % HOUR === 0) return `${ms / HOUR}h`;
  return `${Math.round(ms / 60_000)}min`;
}

/** A size a person reads: 512 B, 3.4 KiB, 12.0 MiB, 1.5 GiB. */
export function readableBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/** "rotates at 16m or 30d, keeps 365d / 64m" (and the spend ledger's floor, when it has one). */
export function policyWords(policy: RetentionPolicy): string {
  const rotates =
    policy.rotateAfterMs > 0
      ? `rotates at ${formatByteSize(policy.maxFileBytes)} or ${age(policy.rotateAfterMs)}`
      : `rotates at ${formatByteSize(policy.maxFileBytes)}`;
  const floor = policy.floorMs > 0 ? `, never under ${age(policy.floorMs)}` : "";
  return `${rotates}, keeps ${age(policy.keepMs)} / ${formatByteSize(policy.keepBytes)}${floor}`;
}

/** The retention section of this root's org.toml; a config that does not load is judged by the defaults. */
async function retentionSection(paths: RosterPaths): Promise<RetentionSection | undefined> {
  const { loadConfig } = await import("../../ground/config/load.ts");
  try {
    return loadConfig(paths.config).org.retention;
  } catch {
    return undefined;
  }
}

export async function doctorLogs(paths: RosterPaths): Promise<DoctorLogs> {
  const { logStandings } = await import("../../records/retention/sweep.ts");
  try {
    const logs = logStandings(paths, await retentionSection(paths)).map(
      (log): DoctorLog => ({
        file: log.file,
        kind: log.kind,
        liveBytes: log.liveBytes,
        rotatedFiles: log.rotatedFiles,
        rotatedBytes: log.rotatedBytes,
        ...log.policy,
        policy: policyWords(log.policy),
        overgrown: log.liveBytes > 2 * log.policy.maxFileBytes,
      }),
    );
    return {
      ok: !logs.some((log) => log.overgrown),
      totalBytes: logs.reduce((sum, log) => sum + log.liveBytes + log.rotatedBytes, 0),
      logs,
    };
  } catch (error) {
    // a data folder doctor can't list is said, not thrown: the rest of the report still stands
    const message = error instanceof Error ? error.message : String(error);
    return { ok: false, totalBytes: 0, logs: [], error: message };
  }
}

/** The text: a summary line, one line per log, and a line for each overgrown one. */
export function formatDoctorLogs(report: DoctorLogs, paths: RosterPaths): string[] {
  const mark = report.ok ? "ok " : "-- ";
  if (report.error) return [`--  logs     could not be listed: ${report.error}`];
  if (report.logs.length === 0)
    return [
      `${mark} logs     none yet: the audit logs, journals and channel histories begin with their first line`,
    ];
  const lines = [
    `${mark} logs     ${report.logs.length} growing log${report.logs.length === 1 ? "" : "s"} hold ${readableBytes(report.totalBytes)} in ${paths.data}`,
  ];
  const name = (file: string) => relative(paths.data, file);
  const width = Math.max(0, ...report.logs.map((log) => name(log.file).length));
  for (const log of report.logs) {
    const rotated = log.rotatedFiles
      ? `, ${log.rotatedFiles} rotated (${readableBytes(log.rotatedBytes)})`
      : "";
    lines.push(
      `    ${name(log.file).padEnd(width)}  ${readableBytes(log.liveBytes)} live${rotated}; ${log.policy}`,
    );
  }
  for (const log of report.logs.filter((one) => one.overgrown))
    lines.push(
      `--  logs     ${name(log.file)} is ${readableBytes(log.liveBytes)}, over twice its max_file (${formatByteSize(log.maxFileBytes)}): retention is not running (the server sweeps once a minute, each run as it starts)`,
    );
  return lines;
}
