import type { ChatPlatform } from "../platform.ts";
import { TERM_PREFIX } from "./ids.ts";
import { term } from "./sender.ts";

/**
 * The terminal: `roster talk` between one host user and one worker. It has
 * no bot and no listener child (talk.ts is both), and no DM to an operator.
 */
export const terminal: ChatPlatform = {
  name: "term",
  channelPrefix: TERM_PREFIX,
  sender: term,
};
