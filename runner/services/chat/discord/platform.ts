import type { ChatPlatform } from "../platform.ts";
import { DISCORD_PREFIX, discordPlace } from "./ids.ts";
import { discordOperatorDm, discordSender } from "./sender.ts";

/** Discord: a bot in guild channels and DMs, over its gateway (listener.ts) and REST (client.ts). */
export const discord: ChatPlatform = {
  name: "discord",
  channelPrefix: DISCORD_PREFIX,
  sender: discordSender,
  listener: async () => {
    const { DiscordListener } = await import("./listener.ts");
    return (host, credential) => new DiscordListener(host, credential);
  },
  personOf: (channelId) => {
    const place = discordPlace(channelId);
    return place && "dmUser" in place ? `discord:${place.dmUser}` : undefined;
  },
  operatorDm: discordOperatorDm,
};
