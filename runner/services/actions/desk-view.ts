import { existsSync, readFileSync } from "node:fs";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { workerOfSubject } from "../../ground/config/subject.ts";
import { executorFor } from "./desk.ts";
import { inboxFile } from "./executors/message-user.ts";
import type { Gate } from "./gates.ts";

/** What the approval desk prints: one row per gate, and a gate in full. */
export function gateRow(gate: Gate): string {
  const executor = executorFor(gate);
  const summary = executor ? executor.summary(gate.payload) : gate.intent;
  return `${gate.id}  ${gate.state.padEnd(9)} ${workerOfSubject(gate.worker).padEnd(12)} ${gate.filed_at.slice(0, 16).replace("T", " ")}  ${summary}`;
}

export function showGate(paths: RosterPaths, gate: Gate): string {
  const executor = executorFor(gate);
  const lines = [
    `gate      ${gate.id} (${gate.state})`,
    `worker    ${workerOfSubject(gate.worker)}${gate.run_id ? `, run ${gate.run_id}` : ""}${gate.task_id ? `, task ${gate.task_id}` : ""}`,
    `intent    ${gate.intent} → ${gate.executor}`,
    `filed     ${gate.filed_at}`,
  ];
  if (gate.decided_by)
    lines.push(
      `decided   ${gate.decided_at ?? ""} by ${gate.decided_by}${gate.decision_note ? `: ${gate.decision_note}` : ""}`,
    );
  if (gate.rationale) lines.push(`why       ${gate.rationale}`);
  if (gate.result !== undefined) lines.push(`result    ${JSON.stringify(gate.result)}`);
  if (gate.error) lines.push(`error     ${gate.error}`);
  const body = executor
    ? executor.render(gate.payload, {
        paths,
        worker: workerOfSubject(gate.worker),
        runId: gate.run_id,
      })
    : JSON.stringify(gate.payload, null, 2);
  return `${lines.join("\n")}\n\n--- what would be sent ---\n${body}\n--- end ---\n`;
}

export interface InboxMessage {
  ts: string;
  worker: string;
  text: string;
}

export function readInbox(paths: RosterPaths, limit: number): InboxMessage[] {
  const file = inboxFile(paths.audit);
  if (!existsSync(file)) return [];
  const messages: InboxMessage[] = [];
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (!line.trim()) continue;
    try {
      messages.push(JSON.parse(line) as InboxMessage);
    } catch {
      // a torn line is skipped, the rest still reads
    }
  }
  return messages.slice(-limit);
}
