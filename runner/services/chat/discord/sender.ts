import { type Static, Type } from "@sinclair/typebox";
import { splitText, VISIBLE } from "../../../ground/text/message-parts.ts";
import type { OperatorDm } from "../platform.ts";
import { chatSender } from "../sender.ts";
import { DISCORD_PREFIX, discordPlace } from "./ids.ts";

/**
 * discord: a message to a Discord channel, posted by the bot through
 * client.ts (loaded only when something is posted). A long text goes as
 * several messages in order.
 */
export const DISCORD_MESSAGE_LIMIT = 2000;

const Payload = Type.Object(
  {
    /**
     * A channel snowflake, or a roster channel id as a session's messages name
     * it: discord-<guild>-<channel>, or discord-dm-<user> for a DM.
     */
    channel_id: Type.String({
      pattern: "^([0-9]{15,21}|discord-[0-9]{15,21}-[0-9]{15,21}|discord-dm-[0-9]{15,21})$",
    }),
    text: Type.String({ minLength: 1, maxLength: 10 * DISCORD_MESSAGE_LIMIT, pattern: VISIBLE }),
  },
  { additionalProperties: false },
);
type Payload = Static<typeof Payload>;

export const discordParts = (text: string) => splitText(text, DISCORD_MESSAGE_LIMIT);

export const discordSender = chatSender<Payload>({
  schema: Payload,
  label: "Discord",
  platform: "discord",
  parts: discordParts,
  where: (payload) => payload.channel_id,
  destination: (payload) => `channel ${payload.channel_id}`,
  async post(payload, parts, via) {
    const { discordBot, openDiscordDm, postDiscordParts } = await import("./client.ts");
    const { rest } = discordBot(via.vault, via.bot);
    const place = discordPlace(payload.channel_id);
    const target = !place
      ? payload.channel_id
      : "dmUser" in place
        ? await openDiscordDm(rest, place.dmUser)
        : place.channel;
    const ids = await postDiscordParts(rest, target, parts, via.key, via.ledger);
    return { ids, roster: payload.channel_id.startsWith(DISCORD_PREFIX) };
  },
  idField: "message_id",
});

/** message-user's DM to the operator named by the "discord" credential's owner_id. */
export const discordOperatorDm: OperatorDm = {
  label: "Discord",
  parts: discordParts,
  async send(owner, parts, context) {
    const { discordBot, openDiscordDm, postDiscordParts } = await import("./client.ts");
    const { rest } = discordBot(context.paths.vault);
    const channel = await openDiscordDm(rest, owner);
    const ids = await postDiscordParts(rest, channel, parts, context.key);
    return { delivered: "discord-dm", channel_id: channel, message_id: ids[0] };
  },
};
