import { scopeApplies } from "../../boundary/gateway/judging/judge.ts";
import { testedConfigSource } from "../../boundary/gateway/policy/vetting.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { workerSubject } from "../../ground/config/subject.ts";
import { errorMessage } from "../../ground/errors.ts";
import { appendJournal } from "../../records/journal/journal.ts";
import type { Task } from "../../records/task-list/store.ts";
import { platformOfChannel } from "../chat/platforms.ts";
import { ActionHost } from "./host.ts";

/**
 * A task filed from a chat session answers where it was asked: once its run
 * is over, its final answer is proposed into the task's channel through the
 * action host, exactly as the session's own reply would be — the worker's
 * `[[action]]` grant for the sender of the channel's platform (the first in
 * scope), the same trust (a trusted channel gets it at once, an
 * untrusted one a gate on the desk), the same journal and audit. Without such
 * a grant nothing is sent and the journal says why.
 */
export const REPLY_MAX_CHARS = 8_000;

function cutAnswer(text: string, runId: string): string {
  if (text.length <= REPLY_MAX_CHARS) return text;
  const marker = `\n\n[… cut at ${REPLY_MAX_CHARS} characters; the whole answer is in run ${runId}]`;
  return `${text.slice(0, REPLY_MAX_CHARS - marker.length).trimEnd()}${marker}`;
}

/**
 * Proposes the answer of `task`'s run (`runId`) into its channel, when it
 * was filed from one with reply_to; returns one line for the server's log,
 * or undefined when the task replies nowhere. Never throws: a reply that
 * can't be sent never changes how the task ended.
 */
export async function replyFromTask(options: {
  paths: RosterPaths;
  worker: string;
  task: Pick<Task, "id" | "channel" | "reply_to" | "context_channels">;
  runId: string;
  answer: string | undefined;
}): Promise<string | undefined> {
  const { paths, worker, task, runId } = options;
  const channel = task.channel;
  if (!channel || task.reply_to !== true) return undefined;
  const text = options.answer?.trim();
  if (!text) return `task ${task.id}: no answer to send to ${channel}`;
  const subject = workerSubject(worker);
  const executor = platformOfChannel(channel)?.name;
  try {
    // as the door takes it: a config failing its own [[test]] cases sends nothing
    const config = testedConfigSource(paths.config, { vaultDir: paths.vault });
    const grant = config
      .get()
      .actions.find(
        (candidate) => candidate.executor === executor && scopeApplies(candidate.scope, subject),
      );
    if (!executor || !grant) {
      const reason = `no [[action]] grant with executor "${executor ?? "?"}" for ${worker}: the answer of task ${task.id} was not sent to ${channel}`;
      appendJournal(paths, {
        worker,
        run_id: runId,
        kind: "action-refused",
        summary: `task ${task.id}'s answer to ${channel}`,
        detail: reason,
      });
      return `task ${task.id}: ${reason}`;
    }
    const answer = await new ActionHost(paths, config).propose(
      // the run was started from the chat the task was filed from
      { subject, runId, origins: [channel, ...(task.context_channels ?? [])] },
      {
        intent: grant.name,
        payload: { channel_id: channel, text: cutAnswer(text, runId) },
        rationale: `the answer of task ${task.id}, filed from this channel`,
        task_id: task.id,
      },
    );
    const body = (answer.body ?? {}) as { gate_id?: unknown; error?: unknown; reason?: unknown };
    if (answer.status === 200) return `task ${task.id}: its answer was sent to ${channel}`;
    if (answer.status === 202)
      return `task ${task.id}: its answer to ${channel} is held for approval (${String(body.gate_id)})`;
    return `task ${task.id}: its answer was not sent to ${channel}: ${String(body.error ?? body.reason ?? answer.status)}`;
  } catch (error) {
    return `task ${task.id}: its answer was not sent to ${channel}: ${errorMessage(error)}`;
  }
}
