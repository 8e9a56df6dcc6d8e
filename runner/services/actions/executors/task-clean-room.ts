import { KNOWLEDGE_WRITE_DEFAULT } from "../../../ground/config/knowledge.ts";
import { loadConfig } from "../../../ground/config/load.ts";
import { workerView } from "../../../ground/config/worker-view.ts";
import { writesFromAny } from "../../../ground/config/write-from.ts";
import { CLEAN_ROOM, participantMatcher } from "../../../work/repos/clean-room.ts";
import { readRunContext } from "../../../work/runs/run-context.ts";
import type { ExecutionContext } from "../../executor.ts";

/**
 * The clean-room rule on a worker's task list. Every run of the worker reads
 * its list (~/self/schedule.json), whichever channel it serves, so under
 * org.toml `[knowledge] write_from = "clean-room"` (the default) a task a
 * conversation files may not name that conversation's people: the scan is
 * the one a gated push gets (repos/clean-room.ts), over each prompt filed.
 * The refusal names the field and whom it names, so the worker can say it
 * again without them.
 */
export function taskCleanRoomProblem(
  context: Omit<ExecutionContext, "key"> | undefined,
  prompts: ReadonlyArray<readonly [field: string, text: string]>,
): string | undefined {
  if (!context?.runId || !prompts.length) return undefined;
  // the worker's own [knowledge] may keep the rule where org.toml lets any run write
  const config = loadConfig(context.paths.config);
  const writeFrom =
    workerView(config, context.worker)?.knowledge.write_from ??
    config.org.knowledge?.write_from ??
    KNOWLEDGE_WRITE_DEFAULT;
  if (writesFromAny(writeFrom)) return undefined;
  const { people } = readRunContext(context.paths, context.worker, context.runId);
  const match = participantMatcher(people);
  for (const [field, text] of prompts) {
    const named = match(text);
    if (named)
      return `${field}: refused by the ${CLEAN_ROOM}: it names ${named}, a participant of this run's conversations, and your task list is read by every run of yours (org.toml [knowledge] write_from = "clean-room"); say what to do without naming them, or keep it in this channel's ~/channel/store`;
  }
  return undefined;
}
