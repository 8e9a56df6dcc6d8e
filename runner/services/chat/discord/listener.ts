import { DiscordAPIError, REST } from "@discordjs/rest";
import { WebSocketManager, WebSocketShardEvents } from "@discordjs/ws";
import {
  type APIChatInputApplicationCommandInteraction,
  type APIInteraction,
  type APIMessage,
  ApplicationCommandType,
  GatewayDispatchEvents,
  GatewayIntentBits,
  InteractionType,
  Routes,
} from "discord-api-types/v10";
import type { Credential } from "../../../boundary/gateway/credentials/vault.ts";
import { errorMessage } from "../../../ground/errors.ts";
import { saveAttachment } from "../../listeners/attachments.ts";
import {
  type ChatAdapter,
  type GateOffer,
  type ListenerHost,
  Unauthorised,
} from "../../listeners/child.ts";
import { cursorChannels, readCursor } from "../../listeners/cursors.ts";
import { ChannelQueues, handOver } from "../../listeners/hand-over.ts";
import { discordChannelId, discordPlace } from "./ids.ts";
import { handleDiscordPress, postDiscordOffer } from "./offers.ts";
import { DiscordRoomClasses } from "./room-classes.ts";
import {
  handleDiscordAutocomplete,
  handleDiscordCommand,
  ownGuilds,
  registerDiscordCommands,
  registerDiscordDmCommands,
} from "./slash.ts";

/**
 * The Discord listener: discord.js's gateway client (@discordjs/ws) for
 * MESSAGE_CREATE, its REST client (@discordjs/rest, which waits out 429s by
 * their retry_after) for history, typing and failure notices. Channels are
 * `discord-<guild>-<channel>`, DMs `discord-dm-<user>`. Each channel's
 * messages are handled one after another, in id order, and the cursor moves
 * only once the server has a message recorded; on every fresh connection the
 * history after each cursor is read, so what arrived while disconnected is
 * handled once, in order. The worker's words go out only through its
 * governed discord_send action; this adapter only ever posts a host notice
 * when a turn failed.
 */
const TYPING_EVERY_MS = 8_000;
const HISTORY_PAGE = 100;

function channelOf(
  message: Pick<APIMessage, "channel_id" | "author"> & { guild_id?: string },
): string {
  return discordChannelId(
    message.guild_id
      ? { guild: message.guild_id, channel: message.channel_id }
      : { dmUser: message.author.id },
  );
}

const newer = (a: string, b: string) => BigInt(a) > BigInt(b);

export class DiscordListener implements ChatAdapter {
  private readonly rest: REST;
  private readonly token: string;
  private manager: WebSocketManager | undefined;
  private botId: string | undefined;
  private applicationId: string | undefined;
  private readonly registered = new Set<string>();
  private readonly queues: ChannelQueues;
  private readonly classes: DiscordRoomClasses;

  constructor(
    private readonly host: ListenerHost,
    credential: Credential,
  ) {
    this.queues = new ChannelQueues(host.note);
    const token = credential.token;
    if (typeof token !== "string" || !token)
      throw new Unauthorised('the credential has no "token" field');
    this.token = token;
    this.rest = new REST({
      ...(typeof credential.api_base === "string" ? { api: credential.api_base } : {}),
      version: "10",
      timeout: 15_000,
      retries: 3,
    }).setToken(token);
    this.classes = new DiscordRoomClasses(this.rest, host.paths, host.note);
  }

  async start(): Promise<void> {
    const manager = new WebSocketManager({
      token: this.token,
      intents:
        GatewayIntentBits.Guilds |
        GatewayIntentBits.GuildMessages |
        GatewayIntentBits.DirectMessages |
        GatewayIntentBits.MessageContent,
      rest: this.rest,
    });
    this.manager = manager;
    manager.on(WebSocketShardEvents.Ready, ({ data }) => {
      this.botId = data.user.id;
      this.applicationId = data.application.id;
      this.host.status("connected");
      void this.registerEverywhere(data.guilds.map((guild) => guild.id));
      void this.catchUp();
    });
    manager.on(WebSocketShardEvents.Resumed, () => this.host.status("connected"));
    manager.on(WebSocketShardEvents.Closed, ({ code }) => {
      if (code === 4004)
        this.host.status("unauthorised", "Discord closed the gateway: 4004 authentication failed");
      else this.host.status("reconnecting", `the gateway closed (code ${code})`);
    });
    manager.on(WebSocketShardEvents.Error, ({ error }) => this.host.note(errorMessage(error)));
    manager.on(WebSocketShardEvents.Dispatch, ({ data }) => {
      this.host.event();
      if (data.t === GatewayDispatchEvents.MessageCreate) this.enqueue(data.d);
      else if (data.t === GatewayDispatchEvents.GuildCreate) void this.register(data.d.id);
      else if (data.t === GatewayDispatchEvents.InteractionCreate) this.interaction(data.d);
    });
    this.host.status("connecting");
    try {
      await manager.connect();
    } catch (error) {
      if (error instanceof DiscordAPIError && error.status === 401)
        throw new Unauthorised("Discord answered 401 to the bot token");
      throw error;
    }
  }

  /** A button press, a command, or an option being typed. */
  private interaction(interaction: APIInteraction): void {
    const failed = (what: string) => (error: unknown) =>
      this.host.note(`${what} was not answered: ${errorMessage(error)}`);
    if (interaction.type === InteractionType.MessageComponent)
      void handleDiscordPress(this.rest, this.host, interaction).catch(failed("a button press"));
    else if (
      interaction.type === InteractionType.ApplicationCommand &&
      interaction.data.type === ApplicationCommandType.ChatInput
    )
      void handleDiscordCommand(
        this.rest,
        this.host,
        interaction as APIChatInputApplicationCommandInteraction,
      ).catch(failed(`/${interaction.data.name}`));
    else if (interaction.type === InteractionType.ApplicationCommandAutocomplete)
      void handleDiscordAutocomplete(this.rest, this.host, interaction).catch(
        failed("an autocomplete"),
      );
  }

  /** The DMs' commands, and each guild's that org.toml names; says where commands are taken. */
  private async registerEverywhere(guilds: string[]): Promise<void> {
    const own = ownGuilds(this.host);
    const others = guilds.filter((guild) => !own.includes(guild)).length;
    this.host.note(
      own.length
        ? `commands are taken in guilds ${own.join(", ")} ([chat.from_platform] discord_guilds) and in DMs with the bot, and Discord's word on a person counts only in those guilds; ${others} other guild(s) the bot is in get none`
        : "no guild is named in org.toml [chat.from_platform] discord_guilds: commands are taken only in DMs with the bot, and Discord's word on a person (roles, Manage Server) counts nowhere",
    );
    await this.registerDms();
    for (const guild of guilds) await this.register(guild);
  }

  /** The commands in DMs with the bot, once while this listener runs. */
  private async registerDms(): Promise<void> {
    if (!this.applicationId || this.registered.has("dm")) return;
    this.registered.add("dm");
    try {
      await registerDiscordDmCommands(this.rest, this.applicationId);
    } catch (error) {
      this.registered.delete("dm");
      this.host.note(`the commands were not registered for DMs: ${errorMessage(error)}`);
    }
  }

  /**
   * The commands in a guild the bot is in and org.toml names, once per guild
   * while this listener runs. A guild not named gets none: its set is
   * replaced by an empty one, so commands an earlier registration left there
   * are gone too (one call per guild, as registering was).
   */
  private async register(guild: string): Promise<void> {
    if (!this.applicationId || this.registered.has(guild)) return;
    const own = ownGuilds(this.host).includes(guild);
    this.registered.add(guild);
    try {
      await registerDiscordCommands(this.rest, this.applicationId, guild, own);
    } catch (error) {
      this.registered.delete(guild);
      this.host.note(
        `the commands were not ${own ? "registered in" : "cleared from"} guild ${guild}: ${errorMessage(error)}`,
      );
    }
  }

  offer(offer: GateOffer): Promise<void> {
    return postDiscordOffer(this.rest, offer);
  }

  async stop(): Promise<void> {
    try {
      await this.manager?.destroy();
    } catch {
      // already closed: nothing to stop
    }
    await this.queues.drain();
  }

  private enqueue(message: APIMessage & { guild_id?: string }): void {
    const channel = channelOf(message);
    this.queues.run(channel, () => this.handle(channel, message));
  }

  /** Everything posted after each cursor while this listener was away, oldest first. */
  private async catchUp(): Promise<void> {
    for (const channel of cursorChannels(this.host.paths, this.host.worker, "discord-")) {
      const cursor = readCursor(this.host.paths, this.host.worker, channel);
      if (!cursor) continue;
      let after = cursor.last_id;
      try {
        for (;;) {
          const page = (await this.rest.get(Routes.channelMessages(cursor.platform_channel), {
            query: new URLSearchParams({ after, limit: String(HISTORY_PAGE) }),
          })) as APIMessage[];
          const ordered = [...page].sort((a, b) => (newer(a.id, b.id) ? 1 : -1));
          const place = discordPlace(channel);
          const guild = place && "guild" in place ? place.guild : undefined;
          for (const message of ordered)
            this.enqueue({ ...message, ...(guild ? { guild_id: guild } : {}) });
          const last = ordered.at(-1);
          if (!last || page.length < HISTORY_PAGE) break;
          after = last.id;
        }
      } catch (error) {
        this.host.note(`${channel}: catching up failed: ${errorMessage(error)}`);
      }
    }
  }

  private async handle(
    channel: string,
    message: APIMessage & { guild_id?: string },
  ): Promise<void> {
    // a room's class is read before its message meets the edge that may name one
    if (message.guild_id)
      await this.classes.classify(channel, message.guild_id, message.channel_id);
    let typing: NodeJS.Timeout | undefined;
    const stopTyping = () => {
      if (typing) clearInterval(typing);
      typing = undefined;
    };
    const direct = !message.guild_id;
    return handOver(this.host, {
      channel,
      id: message.id,
      later: newer,
      platformChannel: message.channel_id,
      fromBot: message.author.bot === true || message.author.id === this.botId,
      direct,
      mentioned: message.mentions?.some((user) => user.id === this.botId) ?? false,
      message: async () => ({
        channel,
        author: message.author.global_name ?? message.author.username,
        author_id: `discord:${message.author.id}`,
        standing: direct ? "dm" : "member",
        text: await this.textOf(channel, message),
      }),
      hooks: {
        onStart: () => {
          void this.typing(message.channel_id);
          typing = setInterval(() => void this.typing(message.channel_id), TYPING_EVERY_MS);
        },
        onDone: stopTyping,
        onFailed: (error) => {
          stopTyping();
          void this.notice(message.channel_id, `⚠️ I couldn't finish that just now: ${error}`);
        },
      },
    });
  }

  private async textOf(channel: string, message: APIMessage): Promise<string> {
    const lines = [message.content];
    for (const attachment of message.attachments ?? []) {
      const saved = await saveAttachment(this.host.paths, channel, {
        id: attachment.id,
        filename: attachment.filename,
        url: attachment.url,
        size: attachment.size,
      });
      lines.push(saved);
    }
    return lines.filter((line) => line.trim()).join("\n") || "(an empty message)";
  }

  private async typing(channelId: string): Promise<void> {
    await this.rest.post(Routes.channelTyping(channelId)).catch(() => undefined);
  }

  private async notice(channelId: string, content: string): Promise<void> {
    await this.rest
      .post(Routes.channelMessages(channelId), { body: { content: content.slice(0, 1900) } })
      .catch((error: unknown) =>
        this.host.note(`a failure notice was not posted: ${errorMessage(error)}`),
      );
  }
}
