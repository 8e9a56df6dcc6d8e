import type { RosterPaths } from "../../ground/config/paths.ts";
import { workerOfSubject } from "../../ground/config/subject.ts";
import { linesFromEndAcross } from "../../ground/files/rotation/read-across.ts";
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

/** How far back `roster inbox` looks for the newest messages, however long the log has grown. */
const INBOX_LOOKBACK_BYTES = 16 * 2 ** 20;

/** The newest `limit` messages, oldest first, read from the log's end and on into its rotated files. */
export function readInbox(paths: RosterPaths, limit: number): InboxMessage[] {
  const messages: InboxMessage[] = [];
  if (limit <= 0) return messages;
  linesFromEndAcross(
    inboxFile(paths.audit),
    (line) => {
      try {
        messages.push(JSON.parse(line) as InboxMessage);
      } catch {
        // a torn line is skipped, the rest still reads
      }
      return messages.length < limit;
    },
    INBOX_LOOKBACK_BYTES,
  );
  return messages.reverse();
}
