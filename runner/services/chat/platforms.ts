import { discord } from "./discord/platform.ts";
import type { ChatPlatform } from "./platform.ts";
import { slack } from "./slack/platform.ts";
import { terminal } from "./terminal/platform.ts";

/**
 * Every chat platform the host speaks, the one place that names them. The
 * order is the order message-user tries them for a DM to the operator. A new
 * platform is one folder under services/chat/ and one line here.
 */
export const CHAT_PLATFORMS: readonly ChatPlatform[] = [terminal, discord, slack];

/** The platform a roster channel id belongs to, by its prefix. */
export function platformOfChannel(channelId: string): ChatPlatform | undefined {
  return CHAT_PLATFORMS.find((platform) => channelId.startsWith(platform.channelPrefix));
}

/** The platform that has a listener by this name (a `[channels]` key), when there is one. */
export function listenerPlatform(name: string): ChatPlatform | undefined {
  return CHAT_PLATFORMS.find((platform) => platform.name === name && platform.listener);
}
