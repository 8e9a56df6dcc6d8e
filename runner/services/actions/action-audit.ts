import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { appendJsonLine } from "../../ground/files/append-line.ts";

/**
 * One line in the gateway's audit log (audit/decisions.jsonl) per action
 * disposition, beside the request decisions: `kind: "action"` tells them
 * apart. One write() on an O_APPEND descriptor, like every audit line.
 */
export type Disposition = "refused" | "gated" | "executed" | "failed" | "denied";

export interface ActionAuditLine {
  decision_id: string;
  ts: string;
  kind: "action";
  worker: string;
  run_id: string | null;
  intent: string;
  disposition: Disposition;
  gate_id: string | null;
  result?: unknown;
  error?: string;
  reason?: string;
  /** Who decided a gate (a desk user, or a chat user as platform:id), or who was refused. */
  decided_by?: string;
}

export function appendActionAudit(
  paths: RosterPaths,
  entry: {
    gate?: {
      worker: string;
      run_id: string | null;
      intent: string;
      id: string;
      result?: unknown;
      error?: string;
      decided_by?: string;
    };
    worker?: string;
    decided_by?: string;
    run_id?: string | null;
    intent?: string;
    disposition: Disposition;
    reason?: string;
    result?: unknown;
    error?: string;
  },
): void {
  const line: ActionAuditLine = {
    decision_id: `act-${randomBytes(6).toString("hex")}`,
    ts: new Date().toISOString(),
    kind: "action",
    worker: entry.gate?.worker ?? entry.worker ?? "?",
    run_id: entry.gate?.run_id ?? entry.run_id ?? null,
    intent: entry.gate?.intent ?? entry.intent ?? "?",
    disposition: entry.disposition,
    gate_id: entry.gate?.id ?? null,
    ...((entry.result ?? entry.gate?.result) !== undefined
      ? { result: entry.result ?? entry.gate?.result }
      : {}),
    ...((entry.error ?? entry.gate?.error) ? { error: entry.error ?? entry.gate?.error } : {}),
    ...(entry.reason ? { reason: entry.reason } : {}),
    ...((entry.decided_by ?? entry.gate?.decided_by)
      ? { decided_by: entry.decided_by ?? entry.gate?.decided_by }
      : {}),
  };
  appendJsonLine(join(paths.audit, "decisions.jsonl"), line);
}
