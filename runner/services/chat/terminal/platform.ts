import type { ChatPlatform } from "../platform.ts";
import { sendTool } from "../send-tool.ts";
import { TERM_PREFIX } from "./ids.ts";
import { term } from "./sender.ts";

/**
 * The terminal: `roster talk` between one host user and one worker. It has
 * no bot and no listener child (talk.ts is both), no DM to an operator, and
 * no server; whoever speaks there is the operator on the host.
 */
export const terminal: ChatPlatform = {
  name: "term",
  channelPrefix: TERM_PREFIX,
  // one host user and one worker: direct, and a surface of its own in a channel class
  direct: true,
  surface: "term",
  // a person at the host's terminal: roster talk's idle window, not chat's
  idle: "talk",
  send: sendTool({
    label: "Send to terminal",
    description: `Post a message to a terminal channel (ids start with "${TERM_PREFIX}").`,
    channel: `the terminal channel id, "${TERM_PREFIX}…"`,
    text: "the message",
    rationale: false,
  }),
  sender: term,
  operators: "the terminal on the host is the operator's",
};
