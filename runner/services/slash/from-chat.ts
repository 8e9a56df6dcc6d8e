import type { RosterPaths } from "../../ground/config/paths.ts";
import type { CommandRequest, CompleteRequest } from "../listeners/protocol.ts";
import type { ChatCommands } from "../listeners/supervisor.ts";
import { type Choice, completions } from "./completions.ts";
import { answer, answerLine } from "./core.ts";
import { fromOptions, UsageError } from "./invocation.ts";

/** A command's text past this is refused unread: no command needs more. */
export const COMMAND_MAX_CHARS = 8_000;

/**
 * The slash-command core as the listeners' supervisor asks it: a command given
 * through a worker's bot (a typed line from Slack, named options from
 * Discord), and the choices for an option being typed.
 */
export function chatCommands(paths: RosterPaths): ChatCommands {
  return {
    async answer(worker: string, request: CommandRequest) {
      const asked = {
        paths,
        worker,
        channel: request.channel,
        asker: { user: request.user, ...(request.platform ? { platform: request.platform } : {}) },
      };
      const size =
        (request.line?.length ?? 0) + JSON.stringify(request.named?.options ?? {}).length;
      if (size > COMMAND_MAX_CHARS)
        return {
          text: `Not done: the command is over ${COMMAND_MAX_CHARS} characters.`,
          room: false,
        };
      if (request.line !== undefined) {
        const said = await answerLine(asked, request.line);
        return { text: said.text, room: said.room === true };
      }
      const named = request.named;
      if (!named) return { text: "Not done: an empty command.", room: false };
      try {
        const said = await answer(asked, fromOptions(named.command, named.sub, named.options));
        return { text: said.text, room: said.room === true };
      } catch (error) {
        if (error instanceof UsageError) return { text: error.message, room: false };
        throw error;
      }
    },
    async complete(worker: string, request: CompleteRequest): Promise<Choice[]> {
      const asker = {
        user: request.user,
        ...(request.platform ? { platform: request.platform } : {}),
      };
      return completions({ paths, worker, channel: request.channel, asker }, request);
    },
  };
}
