import type { DecisionRecord } from "../../boundary/gateway/audit/audit.ts";
import { runDecisions } from "./run-decisions.ts";

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

export function budgetStop(auditDir: string, runId: string): BudgetStop | undefined {
  return budgetStopIn(runDecisions(auditDir, runId));
}

/** The same, from the run's decisions already read. */
export function budgetStopIn(decisions: DecisionRecord[]): BudgetStop | undefined {
  const last = decisions.at(-1);
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
