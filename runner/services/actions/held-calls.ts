import type { HeldMcpCall } from "../../boundary/gateway/exchange/action-host.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { workerOfSubject } from "../../ground/config/subject.ts";
import { appendJournal } from "../../records/journal/journal.ts";
import { appendActionAudit } from "./action-audit.ts";
import { deskFull, heldCallTooBig } from "./desk-bounds.ts";
import { mcpCall } from "./executors/mcp.ts";
import { type Gate, newGateId, writeGate } from "./gates.ts";

/**
 * A tools/call the gateway held (a `verdict = "gate"` grant decided it): filed
 * as a gate for the desk with the arguments as sent, journaled and audited
 * like any proposal. The grant was the admission; the human is the trust.
 * A call too big to keep, or one past the worker's room on the desk, is
 * refused with the reason (the gateway answers it as a JSON-RPC error).
 */
export async function holdMcpCall(
  paths: RosterPaths,
  call: HeldMcpCall,
): Promise<{ gateId: string }> {
  const worker = workerOfSubject(call.caller.subject);
  const runId = call.caller.runId || null;
  const payload = { url: call.url, tool: call.tool, arguments: call.arguments, rule: call.rule };
  const refused = heldCallTooBig(payload) ?? deskFull(paths, worker);
  if (refused) throw new Error(refused);
  const gate: Gate = {
    id: newGateId(),
    worker: call.caller.subject,
    intent: "mcp-call",
    executor: "mcp",
    payload,
    rationale: "",
    run_id: runId,
    task_id: null,
    state: "pending",
    filed_at: new Date().toISOString(),
  };
  const summary = mcpCall.summary(payload);
  const because = `grant "${call.rule}" holds this MCP tool for approval`;
  writeGate(paths, gate);
  appendJournal(paths, {
    worker,
    run_id: runId,
    kind: "gate-filed",
    intent: gate.intent,
    gate_id: gate.id,
    summary,
    detail: because,
  });
  appendActionAudit(paths, { gate, disposition: "gated", reason: because });
  return { gateId: gate.id };
}
