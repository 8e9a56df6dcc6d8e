import { workerOfSubject } from "../../../ground/config/subject.ts";
import { findGate, listGates } from "../../../records/gates/gate-record.ts";
import { approveGate, denyGate } from "../../actions/desk.ts";
import { gateRow, showGate } from "../../actions/desk-view.ts";
import type { CommandContext } from "../context.ts";

/** `/approvals ls | show | approve | deny`: the desk, for this worker's proposals, through its one decision path. */
export async function approvalsAnswer(
  context: CommandContext,
  sub: string,
  args: Record<string, string>,
): Promise<string> {
  const { paths, worker } = context;
  if (sub === "ls") {
    const waiting = listGates(paths, worker).filter(
      (gate) => gate.state === "pending" || gate.state === "failed",
    );
    return waiting.length ? waiting.map(gateRow).join("\n") : "nothing waits for you";
  }
  const gate = findGate(paths, args.id ?? "");
  // a person at one worker's surface decides that worker's proposals, not another's
  const owner = workerOfSubject(gate.worker);
  if (owner !== worker) return `${gate.id} is a proposal of ${owner}, not of ${worker}`;
  if (sub === "show") return showGate(paths, gate);
  const decision = { by: context.asker.user, ...(args.note ? { note: args.note } : {}) };
  const decided = await (sub === "approve" ? approveGate : denyGate)(paths, gate, decision);
  if (decided.state === "executed") return `${decided.id} approved and executed`;
  if (decided.state === "denied") return `${decided.id} denied`;
  return `${decided.id} failed: ${decided.error ?? "unknown error"}`;
}
