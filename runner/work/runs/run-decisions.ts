import { join } from "node:path";
import type { DecisionRecord } from "../../boundary/gateway/audit/audit.ts";
import { isModelCall } from "../../boundary/gateway/spend/usage.ts";
import { linesFromEndAcross } from "../../ground/files/rotation/read-across.ts";

/**
 * What the gateway's audit says about one run, read from the log's tail (a
 * run's last decisions are among the newest lines, however long the log has
 * grown, and across the files it was rotated into). The box can't write this log: it is the host's own account of what
 * the run asked and what it got.
 */
const TAIL_BYTES = 4 * 1024 * 1024;

/** The run's decisions in the log's tail, oldest first. */
export function runDecisions(auditDir: string, runId: string): DecisionRecord[] {
  const out: DecisionRecord[] = [];
  if (!runId) return out;
  // newest first, within the same byte budget whether or not the log was rotated
  linesFromEndAcross(
    join(auditDir, "decisions.jsonl"),
    (line) => {
      if (!line.includes(runId)) return true;
      try {
        const record = JSON.parse(line) as DecisionRecord;
        if (record.run_id === runId && record.request) out.push(record);
      } catch {
        // a line still being written, or a foreign one: not a decision
      }
      return true;
    },
    TAIL_BYTES,
  );
  return out.reverse();
}

/** The run's last model call, as the gateway recorded it. */
export function lastModelCall(decisions: DecisionRecord[]): DecisionRecord | undefined {
  return decisions.findLast((one) => isModelCall(one.request.method, one.request.path));
}

/**
 * Why the run's last model call got no answer, in a few words, or undefined
 * when it got one: refused by the gateway (a rule, a used-up budget, a missing
 * credential) or answered with an error status by the provider.
 */
export function refusedModelCall(decisions: DecisionRecord[]): string | undefined {
  const call = lastModelCall(decisions);
  if (!call || call.status < 400) return undefined;
  const host = call.request.host;
  if (call.budget) return `refused at ${host}: the model budget is used up (${call.budget.detail})`;
  // a line with a transfer outcome was forwarded: the provider said no, not the gateway
  if (call.outcome) return `answered ${call.status} by the model provider at ${host}`;
  const why = call.note ?? (call.verdict === "deny" ? (call.rule ?? "no rule allows it") : "");
  return `refused by the gateway at ${host} (${call.status}${why ? `: ${why}` : ""})`;
}
