import { recordedClass, recordedClassOfSurface } from "../../../records/channels/surface-class.ts";
import type { ChatPlatform } from "../platform.ts";
import { sendTool } from "../send-tool.ts";
import { DISCORD_PREFIX, discordPlace } from "./ids.ts";
import { discordOperatorDm, discordSender } from "./sender.ts";
import { DISCORD_RULES, discordVouch } from "./vouch.ts";

/** Discord: a bot in guild channels and DMs, over its gateway (listener.ts) and REST (client.ts). */
export const discord: ChatPlatform = {
  name: "discord",
  channelPrefix: DISCORD_PREFIX,
  bot: true,
  people: true,
  // a guild channel is in its guild; a DM in none
  serverOf: (channelId) => {
    const place = discordPlace(channelId);
    return place && "guild" in place ? `discord-${place.guild}` : undefined;
  },
  fromPlatform: DISCORD_RULES,
  send: sendTool({
    label: "Send to Discord",
    description: "Post a message to a Discord channel.",
    text: "the message (long ones are split)",
    rationale: true,
  }),
  connection: {
    summary: "Discord's API with a bot token; the same credential the discord executor uses",
    hosts: ["discord.com"],
    inject: { header: "authorization", value: "Bot {token}" },
    secretField: "token",
    verify: { method: "GET", path: "/api/v10/users/@me" },
    // a connection edge's servers are guilds, its surfaces channels; a DM is in no guild
    edgeScope: {
      api: { root: "/api", version: "/api/v10" },
      serverPath: "/api/v10/guilds",
      surfacePath: "/api/v10/channels",
      classes: ["public", "private", "dm"],
      placeOf: (channelId) => {
        const place = discordPlace(channelId);
        if (!place) return undefined;
        return "dmUser" in place
          ? { direct: true }
          : { server: place.guild, surface: place.channel };
      },
      // as the listener read it from Discord's permissions (room-classes.ts)
      classOf: (channel) =>
        "roster" in channel
          ? recordedClass(channel.roster)
          : recordedClassOfSurface(DISCORD_PREFIX, channel.surface),
    },
  },
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
  vouch: discordVouch,
};
