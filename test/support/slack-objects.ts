/**
 * The shapes the Slack stand-in (slack-stand-in.ts), a TEST DOUBLE for
 * Slack, which can't be reached from here, stores and sends on Slack's real
 * wire protocol: a user's post as a test gives it, stored
 * messages as conversations.history returns them, file objects, and the
 * Events API payloads Socket Mode wraps in envelopes — field for field as
 * Slack sends them, for the fields roster reads and the ones a listener is
 * likely to trip over (subtype "file_share", bot_id on the app's own posts,
 * the hidden message_changed / message_deleted that edits send).
 */
import { randomBytes, randomUUID } from "node:crypto";
import type { SlackBlock } from "./slack-blocks.ts";

/** Who the stand-in's workspace and app are; fixed so tests can name them. */
export interface SlackIdentity {
  teamId: string;
  teamName: string;
  appId: string;
  botId: string;
  botUserId: string;
  botName: string;
  /** The deprecated verification token Slack still puts in every event payload. */
  verificationToken: string;
}

export const IDENTITY: SlackIdentity = {
  teamId: "T0ROSTER",
  teamName: "roster",
  appId: "A0ROSTERAPP",
  botId: "B0ROSTERBOT",
  botUserId: "U0ROSTERBOT",
  botName: "roster-bot",
  verificationToken: "rosterverificationtoken0",
};

export interface SlackFile {
  id: string;
  created: number;
  timestamp: number;
  name: string;
  title: string;
  mimetype: string;
  filetype: string;
  user: string;
  size: number;
  mode: "hosted";
  is_external: false;
  url_private: string;
  url_private_download: string;
}

/** A user's message, as a test posts it (the stand-in's `post`). */
export interface UserPost {
  channel: string;
  user: string;
  text: string;
  thread_ts?: string;
  files?: { name: string; bytes: Buffer; mimetype?: string }[];
}

/** A message as Slack stores it and conversations.history / replies return it. */
export interface StoredMessage {
  type: "message";
  /** A file share, or the notice of a channel made private or public (its kind then changes). */
  subtype?: "file_share" | "channel_convert_to_private" | "channel_convert_to_public";
  ts: string;
  user: string;
  text: string;
  team: string;
  thread_ts?: string;
  parent_user_id?: string;
  /** Set on a thread's parent when read back: the reply summary Slack adds. */
  reply_count?: number;
  reply_users_count?: number;
  reply_users?: string[];
  latest_reply?: string;
  client_msg_id?: string;
  bot_id?: string;
  app_id?: string;
  bot_profile?: { id: string; app_id: string; name: string; team_id: string; deleted: false };
  files?: SlackFile[];
  upload?: false;
  display_as_bot?: false;
  /** Block Kit, as stored (slack-blocks.ts). */
  blocks?: SlackBlock[];
  /** Set once the app has edited the message. */
  edited?: { user: string; ts: string };
}

/** The mimetype Slack would sniff for an upload of this name, when the test gives none. */
export function guessMimetype(name: string): string {
  const ext = name.includes(".") ? (name.split(".").pop() ?? "").toLowerCase() : "";
  const known: Record<string, string> = {
    txt: "text/plain",
    md: "text/markdown",
    csv: "text/csv",
    json: "application/json",
    pdf: "application/pdf",
    png: "image/png",
    jpg: "image/jpeg",
    jpeg: "image/jpeg",
    gif: "image/gif",
  };
  return known[ext] ?? "application/octet-stream";
}

/** Slack's own ids: a letter and upper-case alphanumerics. */
export function slackId(prefix: string, length = 10): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  const bytes = randomBytes(length);
  let id = prefix;
  for (const byte of bytes) id += alphabet[byte % alphabet.length];
  return id;
}

/** The file object of an upload, its URLs on the stand-in's origin (served to the bot token only). */
export function slackFile(
  origin: string,
  user: string,
  file: { name: string; bytes: Buffer; mimetype?: string },
): SlackFile {
  const id = slackId("F");
  const url = `${origin}/files/${id}/${encodeURIComponent(file.name)}`;
  const now = Math.floor(Date.now() / 1000);
  return {
    id,
    created: now,
    timestamp: now,
    name: file.name,
    title: file.name,
    mimetype: file.mimetype ?? guessMimetype(file.name),
    filetype: file.name.includes(".") ? (file.name.split(".").pop() ?? "") : "binary",
    user,
    size: file.bytes.length,
    mode: "hosted",
    is_external: false,
    url_private: url,
    url_private_download: url,
  };
}

/** A user's message, as stored; `files` already carry their download URLs. */
export function userMessage(
  identity: SlackIdentity,
  input: { user: string; text: string; ts: string; thread_ts?: string; parentUser?: string },
  files: SlackFile[],
): StoredMessage {
  return {
    type: "message",
    // Slack marks a message carrying uploads as a file share, which listeners that skip subtypes miss.
    ...(files.length > 0 ? { subtype: "file_share" as const } : {}),
    ts: input.ts,
    user: input.user,
    text: input.text,
    team: identity.teamId,
    client_msg_id: randomUUID(),
    ...threadFields(input.thread_ts, input.ts, input.parentUser),
    ...(files.length > 0 ? { files, upload: false as const, display_as_bot: false as const } : {}),
  };
}

/** The app's own post (chat.postMessage with the bot token): a bot message with the bot's user. */
export function botMessage(
  identity: SlackIdentity,
  input: {
    text: string;
    ts: string;
    thread_ts?: string;
    parentUser?: string;
    blocks?: SlackBlock[];
  },
): StoredMessage {
  return {
    type: "message",
    ts: input.ts,
    user: identity.botUserId,
    text: input.text,
    team: identity.teamId,
    ...(input.blocks && input.blocks.length > 0 ? { blocks: input.blocks } : {}),
    bot_id: identity.botId,
    app_id: identity.appId,
    bot_profile: {
      id: identity.botId,
      app_id: identity.appId,
      name: identity.botName,
      team_id: identity.teamId,
      deleted: false,
    },
    ...threadFields(input.thread_ts, input.ts, input.parentUser),
  };
}

function threadFields(threadTs: string | undefined, ts: string, parentUser: string | undefined) {
  if (!threadTs || threadTs === ts) return {};
  return { thread_ts: threadTs, ...(parentUser ? { parent_user_id: parentUser } : {}) };
}

/** The `message` event for a stored message in `channel`, of its kind (slack-conversations.ts). */
export function messageEvent(
  channel: string,
  message: StoredMessage,
  channelType: string,
): Record<string, unknown> {
  return { ...message, channel, event_ts: message.ts, channel_type: channelType };
}

/**
 * The hidden `message_changed` event an edit sends (ts is the edit's own);
 * the message itself, with its new fields, rides inside.
 */
export function messageChangedEvent(
  channel: string,
  previous: StoredMessage,
  message: StoredMessage,
  ts: string,
  channelType: string,
): Record<string, unknown> {
  return {
    type: "message",
    subtype: "message_changed",
    hidden: true,
    message,
    previous_message: previous,
    channel,
    ts,
    event_ts: ts,
    channel_type: channelType,
  };
}

/** The hidden `message_deleted` event a deletion sends. */
export function messageDeletedEvent(
  channel: string,
  previous: StoredMessage,
  ts: string,
  channelType: string,
): Record<string, unknown> {
  return {
    type: "message",
    subtype: "message_deleted",
    hidden: true,
    deleted_ts: previous.ts,
    previous_message: previous,
    channel,
    ts,
    event_ts: ts,
    channel_type: channelType,
  };
}

/** The `app_mention` event Slack sends besides `message` when a user's text mentions the bot. */
export function appMentionEvent(channel: string, message: StoredMessage): Record<string, unknown> {
  const { subtype: _subtype, upload: _upload, display_as_bot: _display, ...rest } = message;
  return { ...rest, type: "app_mention", channel, event_ts: message.ts };
}

/** Whether `text` mentions the user the way Slack encodes it: <@U123> or <@U123|name>. */
export function mentions(text: string, userId: string): boolean {
  return new RegExp(`<@${userId}(\\|[^>]*)?>`).test(text);
}

/** The Events API callback an `events_api` envelope carries as its payload. */
export function eventCallback(
  identity: SlackIdentity,
  event: Record<string, unknown>,
): Record<string, unknown> & { event_id: string } {
  return {
    token: identity.verificationToken,
    team_id: identity.teamId,
    context_team_id: identity.teamId,
    context_enterprise_id: null,
    api_app_id: identity.appId,
    event,
    type: "event_callback",
    event_id: slackId("Ev"),
    event_time: Math.floor(Date.now() / 1000),
    authorizations: [
      {
        enterprise_id: null,
        team_id: identity.teamId,
        user_id: identity.botUserId,
        is_bot: true,
        is_enterprise_install: false,
      },
    ],
    is_ext_shared_channel: false,
    event_context: `4-${Buffer.from(JSON.stringify({ app: identity.appId })).toString("base64url")}`,
  };
}
