import { declarePlatforms } from "../../ground/chat/terms.ts";
import { discord } from "./discord/platform.ts";
import type { ChatPlatform } from "./platform.ts";
import { slack } from "./slack/platform.ts";
import { terminal } from "./terminal/platform.ts";

/**
 * Every chat platform the host speaks, the one place that names them. The
 * order is the order message-user tries them for a DM to the operator, and
 * the order the box lists their send tools in. A new
 * platform is one folder under services/chat/ and one line here. Reading
 * this list hands each platform's terms to the floors below (ground/chat/
 * terms.ts): the config's keys and id rules, the send tools, the bots'
 * connection recipes. The command line reads it first (cli/main.ts).
 */
const platforms: ChatPlatform[] = [discord, slack, terminal];
export const CHAT_PLATFORMS: readonly ChatPlatform[] = platforms;
declarePlatforms(CHAT_PLATFORMS);

/**
 * One more platform, after the list's own: for a platform written for the
 * test suite (test/support/), which the list does not name.
 */
export function addChatPlatform(platform: ChatPlatform): void {
  if (platforms.some((known) => known.name === platform.name)) return;
  platforms.push(platform);
  declarePlatforms(CHAT_PLATFORMS);
}

/** The platform a roster channel id belongs to, by its prefix. */
export function platformOfChannel(channelId: string): ChatPlatform | undefined {
  return CHAT_PLATFORMS.find((platform) => channelId.startsWith(platform.channelPrefix));
}

/** The platform that has a listener by this name (a `[channels]` key), when there is one. */
export function listenerPlatform(name: string): ChatPlatform | undefined {
  return CHAT_PLATFORMS.find((platform) => platform.name === name && platform.listener);
}
