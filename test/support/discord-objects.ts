/**
 * Discord's object shapes for the Discord stand-in (discord-stand-in.ts), a
 * TEST DOUBLE for Discord, which can't be reached from here, speaking its
 * real wire protocol: snowflakes, users, messages, attachments, interaction
 * tokens and button interactions as Discord's HTTP API and gateway serialize
 * them. Typed against discord-api-types so a field Discord always sends can't
 * silently go missing from the double.
 */
import { randomBytes } from "node:crypto";
import {
  type APIAttachment,
  type APIGuildMemberNoUser,
  type APIMessage,
  type APIMessageComponentButtonInteraction,
  type APIMessageTopLevelComponent,
  type APIUser,
  ApplicationIntegrationType,
  ChannelType,
  ComponentType,
  GatewayIntentBits,
  type GatewayMessageCreateDispatchData,
  type GuildMemberFlags,
  InteractionContextType,
  InteractionType,
  Locale,
  type MessageFlags,
  MessageType,
  type UserFlags,
} from "discord-api-types/v10";

/**
 * Discord sends 0 for a bit field with no flag set; the flag enums have no
 * member for 0, so the empty set is spelled once here.
 */
export const NO_FLAGS = 0 as UserFlags & MessageFlags & GuildMemberFlags;

/** Discord's tokens are opaque base64 naming the interaction; only the stand-in reads them back. */
export function interactionToken(id: string): string {
  return Buffer.from(`interaction:${id}:${randomBytes(48).toString("base64url")}`).toString(
    "base64url",
  );
}

/** Discord's epoch (2015-01-01T00:00:00Z); snowflakes count milliseconds from it. */
const DISCORD_EPOCH = 1_420_070_400_000n;

/**
 * Mints ids the way Discord does — milliseconds since its epoch in the top
 * bits — so they sort by creation time and a client may derive a timestamp
 * from one; ids minted within one millisecond still strictly increase.
 */
export class Snowflakes {
  private last = 0n;

  next(): string {
    const minted = (BigInt(Date.now()) - DISCORD_EPOCH) << 22n;
    this.last = minted > this.last ? minted : this.last + 1n;
    return String(this.last);
  }
}

/** A message the bot sent through POST /channels/:id/messages. */
export interface DiscordMessage {
  id: string;
  channel_id: string;
  content: string;
  nonce?: string;
  /** Present when the message carried components, as Discord stored them. */
  components?: APIMessageTopLevelComponent[];
}

/** A user's message, as a test posts it with `post()`. */
export interface PostedMessage {
  channel_id: string;
  /** Absent for a DM channel. */
  guild_id?: string;
  author: PostedAuthor;
  content: string;
  /** User ids the message mentions. */
  mentions?: string[];
  attachments?: { filename: string; bytes: Buffer; content_type?: string }[];
}

/** GET /gateway/bot's answer: one shard, and starts to spare. */
export function gatewayBot(url: string) {
  const session_start_limit = { total: 1000, remaining: 999, reset_after: 0, max_concurrency: 1 };
  return { url, shards: 1, session_start_limit };
}

/** The DM channel POST /users/@me/channels answers. */
export function dmChannel(id: string, recipient: string) {
  return {
    id,
    type: 1,
    last_message_id: null,
    flags: 0,
    recipients: [{ id: recipient, username: "owner", discriminator: "0", global_name: null }],
  };
}

/** Who a test says posted a message. */
export interface PostedAuthor {
  id: string;
  username: string;
  bot?: boolean;
}

/** A user object as Discord sends it; `bot` is present only for bots, as on the wire. */
export function apiUser(author: PostedAuthor): APIUser {
  return {
    id: author.id,
    username: author.username,
    discriminator: "0",
    global_name: null,
    avatar: null,
    public_flags: NO_FLAGS,
    ...(author.bot ? { bot: true } : {}),
  };
}

/** Discord's timestamp format: microsecond precision and an explicit +00:00 offset. */
export function discordTimestamp(at = new Date()): string {
  return at.toISOString().replace("Z", "000+00:00");
}

/** Bytes a test attached to a posted message, served unauthenticated like Discord's CDN. */
export interface StoredAttachment {
  channelId: string;
  id: string;
  filename: string;
  bytes: Buffer;
  contentType: string | undefined;
  /** The `hm` signature of the URL handed out; the CDN refuses a URL without it. */
  signature: string;
}

const CONTENT_TYPES: Record<string, string> = {
  txt: "text/plain; charset=utf-8",
  md: "text/markdown; charset=utf-8",
  json: "application/json",
  pdf: "application/pdf",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
};

/** Discord infers content_type from the file name and leaves it out when it can't. */
function inferContentType(filename: string): string | undefined {
  const extension = filename.split(".").pop()?.toLowerCase() ?? "";
  return CONTENT_TYPES[extension];
}

/** Keeps a posted file for the CDN, with the signature its URL will carry. */
export function storedAttachment(
  channelId: string,
  id: string,
  file: { filename: string; bytes: Buffer; content_type?: string },
): StoredAttachment {
  return {
    channelId,
    id,
    filename: file.filename,
    bytes: file.bytes,
    contentType: file.content_type ?? inferContentType(file.filename),
    signature: randomBytes(32).toString("hex"),
  };
}

/**
 * The attachment object pointing at the stand-in's CDN route. Discord's CDN
 * URLs are signed (`ex` expiry, `is` issue time, `hm` hash, hex) and a URL
 * stripped of them is refused, so a client must use the URL as given.
 */
export function apiAttachment(origin: string, stored: StoredAttachment): APIAttachment {
  const issued = Math.floor(Date.now() / 1000);
  const query = `ex=${(issued + 86_400).toString(16)}&is=${issued.toString(16)}&hm=${stored.signature}&`;
  const url = `${origin}/attachments/${stored.channelId}/${stored.id}/${encodeURIComponent(stored.filename)}?${query}`;
  return {
    id: stored.id,
    filename: stored.filename,
    size: stored.bytes.length,
    url,
    proxy_url: url,
    ...(stored.contentType ? { content_type: stored.contentType } : {}),
  };
}

/** A message object as Discord's HTTP API returns it (no guild_id, no member). */
export function apiMessage(fields: {
  id: string;
  channelId: string;
  author: APIUser;
  content: string;
  mentions: APIUser[];
  attachments: APIAttachment[];
  components?: APIMessageTopLevelComponent[];
}): APIMessage {
  return {
    type: MessageType.Default,
    id: fields.id,
    channel_id: fields.channelId,
    author: fields.author,
    content: fields.content,
    timestamp: discordTimestamp(),
    edited_timestamp: null,
    tts: false,
    mention_everyone: false,
    mentions: fields.mentions,
    mention_roles: [],
    attachments: fields.attachments,
    embeds: [],
    components: fields.components ?? [],
    pinned: false,
    flags: NO_FLAGS,
  };
}

/** The partial member Discord adds to guild MESSAGE_CREATE payloads (and, with user and permissions, to interactions). */
export function member(): APIGuildMemberNoUser {
  return {
    roles: [],
    joined_at: discordTimestamp(new Date(Date.now() - 86_400_000)),
    deaf: false,
    mute: false,
    flags: NO_FLAGS,
    pending: false,
    premium_since: null,
    nick: null,
    avatar: null,
    banner: null,
    communication_disabled_until: null,
  };
}

/**
 * The MESSAGE_CREATE payload one session receives, or undefined when its
 * intents don't subscribe to it. As on Discord: guild messages need
 * GuildMessages and DMs need DirectMessages; without the privileged
 * MessageContent intent, content, attachments, embeds and components arrive
 * empty — except in DMs, in messages that mention the bot, and in the bot's own.
 */
export function messageCreateFor(
  message: APIMessage,
  guildId: string | undefined,
  intents: number,
  botUserId: string,
): GatewayMessageCreateDispatchData | undefined {
  const needed = guildId ? GatewayIntentBits.GuildMessages : GatewayIntentBits.DirectMessages;
  if ((intents & needed) === 0) return undefined;
  const readable =
    (intents & GatewayIntentBits.MessageContent) !== 0 ||
    !guildId ||
    message.author.id === botUserId ||
    message.mentions.some((user) => user.id === botUserId);
  const body = readable
    ? message
    : { ...message, content: "", attachments: [], embeds: [], components: [] };
  if (!guildId) return body;
  return {
    ...body,
    guild_id: guildId,
    member: member(),
    mentions: message.mentions.map((user) => ({ ...user, member: member() })),
  };
}

/**
 * One page of GET /channels/:id/messages over a channel's history (stored
 * oldest first). Discord always answers newest first, but which messages it
 * picks depends on the cursor: with `after` it returns the OLDEST `limit`
 * messages after the cursor (the ones right after it, so paging forward with
 * the newest id of each page walks the whole history without gaps); with
 * `before`, or with no cursor, the NEWEST `limit` before it.
 */
export function historyPage(
  history: readonly APIMessage[],
  page: { cursor: { after?: bigint; before?: bigint }; limit: number },
): APIMessage[] {
  const { cursor, limit } = page;
  const { after, before } = cursor;
  if (after !== undefined) {
    return history
      .filter((message) => BigInt(message.id) > after)
      .slice(0, limit)
      .reverse();
  }
  const older =
    before === undefined ? [...history] : history.filter((message) => BigInt(message.id) < before);
  return older.slice(-limit).reverse();
}

/** The upload limit Discord states on interactions in a guild without boosts. */
const ATTACHMENT_SIZE_LIMIT = 10 * 1024 * 1024;

/** What a button press's INTERACTION_CREATE is built from. */
export interface ButtonPress {
  id: string;
  token: string;
  applicationId: string;
  /** The pressed message, whole, as stored. */
  message: APIMessage;
  customId: string;
  user: APIUser;
  guildId: string | undefined;
}

/**
 * The INTERACTION_CREATE payload of a button press (type 3,
 * MESSAGE_COMPONENT): in a guild the presser comes as `member` (user inside,
 * with permissions), in a DM as `user`.
 */
export function buttonInteraction(press: ButtonPress): APIMessageComponentButtonInteraction {
  const { guildId, message, user } = press;
  const common = {
    id: press.id,
    application_id: press.applicationId,
    type: InteractionType.MessageComponent as const,
    token: press.token,
    version: 1 as const,
    channel_id: message.channel_id,
    message,
    data: { custom_id: press.customId, component_type: ComponentType.Button as const },
    locale: Locale.EnglishUS,
    app_permissions: "0",
    entitlements: [],
    // A guild-installed app is authorised by the guild; in a DM with the bot Discord names guild "0".
    authorizing_integration_owners: { [ApplicationIntegrationType.GuildInstall]: guildId ?? "0" },
    attachment_size_limit: ATTACHMENT_SIZE_LIMIT,
  };
  if (!guildId) {
    return {
      ...common,
      channel: { id: message.channel_id, type: ChannelType.DM },
      user,
      context: InteractionContextType.BotDM,
    };
  }
  return {
    ...common,
    guild_id: guildId,
    guild: { id: guildId, features: [], locale: Locale.EnglishUS },
    guild_locale: Locale.EnglishUS,
    channel: { id: message.channel_id, type: ChannelType.GuildText, guild_id: guildId },
    member: { ...member(), user, permissions: "0" },
    context: InteractionContextType.Guild,
  };
}
