import { readTrip } from "../../boundary/gateway/audit/tripwire.ts";
import type { RunRecord, SentinelLeak } from "../../records/run-records/run-record.ts";

/**
 * The sentinel tripwire's mark on a run, as the host shows it: the gateway's
 * own file (audit/tripwires/<run>.json, current while the run goes on and a
 * second at most behind its last trip) when it is there, else what the
 * record kept of it when the run ended. One small file read by name, never
 * the audit log.
 */
export function sentinelLeakOf(auditDir: string, record: RunRecord): SentinelLeak | undefined {
  const trip = readTrip(auditDir, record.id);
  if (!trip) return record.sentinel_leak;
  return {
    count: trip.count,
    first_at: trip.first_at,
    first_host: trip.first_host,
    last_at: trip.last_at,
  };
}

/** The record as it ends: the mark copied in, so it outlives the gateway's file. */
export function markedRecord(auditDir: string, record: RunRecord): RunRecord {
  const leak = sentinelLeakOf(auditDir, record);
  return leak ? { ...record, sentinel_leak: leak } : record;
}

/** In words, for `roster runs show`, the console and the end of a run. */
export function describeSentinelLeak(leak: SentinelLeak): string {
  const times = leak.count === 1 ? "once" : `${leak.count} times`;
  return `the box sent its credential sentinel where no credential is injected, refused ${times} (first ${leak.first_at} to ${leak.first_host}): a box sending what it takes for a credential to another host is the clearest sign of an injected prompt`;
}
