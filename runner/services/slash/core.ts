import { loadConfig } from "../../ground/config/load.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { workerSubject } from "../../ground/config/subject.ts";
import { errorMessage } from "../../ground/errors.ts";
import { appendActionAudit } from "../actions/action-audit.ts";
import { approvalsAnswer } from "./answers/approvals.ts";
import { channelAnswer } from "./answers/channel.ts";
import { helpAnswer } from "./answers/help.ts";
import { identityAnswer } from "./answers/identity.ts";
import { purposeAnswer } from "./answers/purpose.ts";
import { runsAnswer } from "./answers/runs.ts";
import { taskAnswer } from "./answers/tasks.ts";
import { workerAnswer } from "./answers/worker.ts";
import { type Asker, allows, refusal, standingOf } from "./authority.ts";
import { type CommandAnswer, type CommandContext, CommandRefused } from "./context.ts";
import { type Invocation, readLine, UsageError } from "./invocation.ts";
import { REFUSALS_WRITTEN, refusals, refusedArgs } from "./refusals.ts";

/**
 * The one place a person's slash command is answered, whichever surface it came
 * from (`roster talk`, a Discord application command, a Slack slash
 * command): read against the catalogue, judged against the asker's standing,
 * answered, and written to the action journal with who asked from where and
 * how it ended (a refusal's line bounded, refusals.ts). These never reach the worker: a worker can't approve its
 * own proposals by typing.
 */
export interface Asked {
  paths: RosterPaths;
  worker: string;
  channel: string | undefined;
  asker: Asker;
}

/** A typed line, `/task add …`; a line that can't be read is answered with its usage. */
export function answerLine(asked: Asked, line: string): Promise<CommandAnswer> {
  let invocation: Invocation;
  try {
    invocation = readLine(line);
  } catch (error) {
    if (error instanceof UsageError) return Promise.resolve({ text: error.message });
    throw error;
  }
  return answer(asked, invocation);
}

export async function answer(asked: Asked, invocation: Invocation): Promise<CommandAnswer> {
  const { command, sub, args } = invocation;
  const name = `/${command.name} ${sub.name}`;
  const chat = loadConfig(asked.paths.config).org.chat;
  const judged = standingOf(asked.asker, chat);
  const journal = (disposition: "executed" | "failed", detail?: string) =>
    appendActionAudit(asked.paths, {
      worker: workerSubject(asked.worker),
      intent: `command ${name}`,
      disposition,
      decided_by: asked.asker.user,
      reason: `from ${asked.channel ?? "no channel"}${detail ? `: ${detail}` : ""}`,
      ...(Object.keys(args).length ? { result: { args } } : {}),
    });
  /** A refusal's line: an excerpt of its arguments, and none past the asker's bound (refusals.ts). */
  const refused = (why: string) => {
    const admitted = refusals.admit(asked.asker.user);
    if (admitted)
      appendActionAudit(asked.paths, {
        worker: workerSubject(asked.worker),
        intent: `command ${name}`,
        disposition: "refused",
        decided_by: asked.asker.user,
        reason: `from ${asked.channel ?? "no channel"}: ${why}${
          admitted.leftOut
            ? ` (and ${admitted.leftOut} refusal(s) of this asker before it not written: over ${REFUSALS_WRITTEN} a minute)`
            : ""
        }`,
        ...(Object.keys(args).length ? { result: { args: refusedArgs(args) } } : {}),
      });
    return { text: `Not done: ${name} ${why}.` };
  };
  if (!allows(judged.standing, sub.authority)) return refused(refusal(sub.authority, judged));
  const context: CommandContext = { ...asked, judged };
  try {
    const said = await dispatch(context, invocation);
    if (command.name !== "help") journal("executed");
    return typeof said === "string" ? { text: said } : said;
  } catch (error) {
    if (error instanceof CommandRefused) return refused(error.message);
    journal("failed", errorMessage(error));
    return { text: `${name}: ${errorMessage(error)}` };
  }
}

/** Each command's answer, by name: what it reads or changes. */
const ANSWERS: Readonly<
  Record<
    string,
    (
      context: CommandContext,
      sub: string,
      args: Record<string, string>,
    ) => Promise<string | CommandAnswer> | string | CommandAnswer
  >
> = {
  approvals: approvalsAnswer,
  task: taskAnswer,
  runs: runsAnswer,
  channel: channelAnswer,
  purpose: purposeAnswer,
  worker: workerAnswer,
  identity: identityAnswer,
  help: helpAnswer,
};

function dispatch(
  context: CommandContext,
  { command, sub, args }: Invocation,
): Promise<string | CommandAnswer> | string | CommandAnswer {
  const answerOf = ANSWERS[command.name] ?? helpAnswer;
  return answerOf(context, sub.name, args);
}
