import { workerSubject } from "../../../ground/config/subject.ts";
import { isTrusted } from "../../../records/channels/designations.ts";
import { readPurpose } from "../../../records/channels/store.ts";
import { appendActionAudit } from "../../actions/action-audit.ts";
import { purpose } from "../../actions/executors/purpose.ts";
import { type Gate, newGateId, writeGate } from "../../actions/gates.ts";
import type { CommandAnswer, CommandContext } from "../context.ts";

/**
 * `/purpose`: what the channel is for; `/purpose edit <text>` writes a new
 * one at once in a trusted channel, and elsewhere files it as a proposal the
 * desk (or an approver in a trusted channel) decides: a channel nobody
 * vouched for can't rewrite what its own worker is told it is for.
 */
export async function purposeAnswer(
  context: CommandContext,
  sub: string,
  args: Record<string, string>,
): Promise<CommandAnswer> {
  const { paths, channel, worker, asker } = context;
  if (!channel) return { text: "this surface is not a channel" };
  if (sub === "show") return { text: readPurpose(paths, channel)?.trim() ?? "(no purpose yet)" };
  const payload = { channel_id: channel, purpose: `${(args.text ?? "").trim()}\n` };
  if (isTrusted(paths, channel)) {
    await purpose.run(payload, { paths, worker, key: newGateId() });
    return {
      text: `the purpose of ${channel} is now: ${payload.purpose.trim()} (by ${asker.user})`,
      room: true,
    };
  }
  const gate: Gate = {
    id: newGateId(),
    worker: workerSubject(worker),
    intent: "purpose",
    executor: "purpose",
    payload,
    rationale: `${asker.user} asked for it with /purpose edit in ${channel}, which is not trusted`,
    run_id: null,
    task_id: null,
    state: "pending",
    filed_at: new Date().toISOString(),
  };
  writeGate(paths, gate);
  appendActionAudit(paths, { gate, disposition: "gated", reason: gate.rationale });
  return {
    text: `${channel} is not trusted, so the new purpose waits for approval as ${gate.id} (roster approvals, or /approvals where an approver is)`,
  };
}
