/**
 * The channels' messages for the Discord stand-in (discord-stand-in.ts):
 * every channel's history, users' messages and the bot's alike, and the
 * gateway dispatches Discord sends as it changes — MESSAGE_CREATE for a new
 * message, MESSAGE_UPDATE (the whole message, as Discord now sends it) for an
 * edited one — each under the intents that subscribe a session to it.
 */
import type { APIMessage } from "discord-api-types/v10";
import { GatewayDispatchEvents } from "discord-api-types/v10";
import type { DiscordGateway } from "./discord-gateway-stand-in.ts";
import { messageCreateFor } from "./discord-objects.ts";

export class DiscordChannels {
  /** Every channel's messages, oldest first. */
  private readonly histories = new Map<string, APIMessage[]>();
  /** The guild of a channel a test posted into with a guild_id; other channels are DMs. */
  private readonly guilds = new Map<string, string>();

  constructor(
    private readonly gateway: DiscordGateway,
    private readonly botUserId: string,
  ) {}

  /** A channel's messages, oldest first. */
  history(channelId: string): readonly APIMessage[] {
    return this.histories.get(channelId) ?? [];
  }

  /** The message with this id, in whichever channel it is. */
  find(id: string): APIMessage | undefined {
    for (const history of this.histories.values()) {
      const found = history.find((message) => message.id === id);
      if (found) return found;
    }
    return undefined;
  }

  guildOf(channelId: string): string | undefined {
    return this.guilds.get(channelId);
  }

  setGuild(channelId: string, guildId: string): void {
    this.guilds.set(channelId, guildId);
  }

  /** Adds a message to its channel's history and dispatches MESSAGE_CREATE (with the nonce it was sent with). */
  add(message: APIMessage, nonce?: string): void {
    const history = this.histories.get(message.channel_id) ?? [];
    history.push(message);
    this.histories.set(message.channel_id, history);
    const sent = nonce ? { ...message, nonce } : message;
    this.dispatch(GatewayDispatchEvents.MessageCreate, sent);
  }

  /** Puts an edited message in its place in the history and dispatches MESSAGE_UPDATE. */
  replace(message: APIMessage): void {
    const history = this.histories.get(message.channel_id) ?? [];
    const at = history.findIndex((stored) => stored.id === message.id);
    if (at >= 0) history[at] = message;
    this.dispatch(GatewayDispatchEvents.MessageUpdate, message);
  }

  /** Forgets the messages; which guild a channel is in stays, as the channel does. */
  clear(): void {
    this.histories.clear();
  }

  private dispatch(t: GatewayDispatchEvents, message: APIMessage): void {
    const guildId = this.guilds.get(message.channel_id);
    // A MESSAGE_UPDATE payload has MESSAGE_CREATE's shape and the same intent rules.
    this.gateway.dispatch(t, (session) =>
      messageCreateFor(message, guildId, session.intents, this.botUserId),
    );
  }
}
