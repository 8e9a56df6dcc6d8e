import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { join } from "node:path";
import type { DecisionRecord } from "../gateway/audit.ts";

/**
 * Did a run stop because its budget was used up? The gateway's audit says so
 * (the box can't write it): the run's last decision is a budget refusal. The
 * engine asks again a few times after a refusal and then gives up, so the
 * line is among the newest; only the log's tail is read, however long the
 * log has grown.
 */
export interface BudgetStop {
  /** e.g. "tokens over day cap (1200.0000/1000.0000)" */
  detail: string;
  retryAfterSecs: number;
  host: string;
}

const TAIL_BYTES = 4 * 1024 * 1024;

export function budgetStop(auditDir: string, runId: string): BudgetStop | undefined {
  let last: DecisionRecord | undefined;
  for (const line of tailLines(join(auditDir, "decisions.jsonl"), TAIL_BYTES)) {
    if (!line.includes(runId)) continue;
    try {
      const record = JSON.parse(line) as DecisionRecord;
      if (record.run_id === runId && record.request) last = record;
    } catch {
      // a torn first line of the tail, or a foreign one: not a decision
    }
  }
  if (last?.status !== 402 || !last.budget) return undefined;
  return {
    detail: last.budget.detail,
    retryAfterSecs: last.budget.retry_after_secs,
    host: last.request.host,
  };
}

/** What a person reads: which cap, and when it opens again. */
export function describeBudgetStop(stop: BudgetStop): string {
  return `the model budget is used up (${stop.detail}, refused at ${stop.host}); it resets in ${describeSeconds(stop.retryAfterSecs)}`;
}

function describeSeconds(seconds: number): string {
  if (seconds >= 3600) return `${Math.ceil(seconds / 3600)} h`;
  if (seconds >= 60) return `${Math.ceil(seconds / 60)} min`;
  return `${seconds} s`;
}

function tailLines(file: string, bytes: number): string[] {
  let fd: number;
  try {
    fd = openSync(file, "r");
  } catch {
    return [];
  }
  try {
    const size = fstatSync(fd).size;
    const start = Math.max(0, size - bytes);
    const buffer = Buffer.alloc(size - start);
    let read = 0;
    while (read < buffer.length) {
      const n = readSync(fd, buffer, read, buffer.length - read, start + read);
      if (n === 0) break;
      read += n;
    }
    return buffer.subarray(0, read).toString("utf8").split("\n");
  } finally {
    closeSync(fd);
  }
}
