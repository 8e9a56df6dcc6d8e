/**
 * HTTP pieces of the Slack stand-in (slack-stand-in.ts), a TEST DOUBLE for
 * Slack, which can't be reached from here, speaking its real wire protocol:
 * request bodies the way Slack's Web API reads them (form-encoded or JSON,
 * and query-string arguments too), which token each method takes, the Web
 * API methods that take the bot token (posting with Block Kit, editing the
 * app's own messages, ephemeral messages, users.info from slack-users.ts,
 * conversations.info from slack-conversations.ts),
 * and private file downloads the way Slack
 * serves url_private_download — the bytes for the bot token, and for anyone
 * else a redirect to the workspace sign-in page (an HTML 200 once followed),
 * which is why a downloader must check what it got rather than trust a 200.
 */
import type { IncomingHttpHeaders, ServerResponse } from "node:http";
import { readBlocks, type SlackBlock } from "./slack-blocks.ts";
import type { ChannelHistory } from "./slack-history.ts";
import { botMessage, IDENTITY, type StoredMessage } from "./slack-objects.ts";
import type { SlackUser } from "./slack-users.ts";

/** A request as it arrived: method, path, headers, and the parsed body with query arguments. */
export interface SlackRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

export type Reply = (
  status: number,
  payload: Record<string, unknown>,
  headers?: Record<string, string>,
) => void;

export interface StoredFile {
  name: string;
  bytes: Buffer;
  mimetype: string;
}

/** WebClient sends form-encoded bodies; Slack also accepts JSON (`{unparsed}` when it isn't). */
export function parseBody(contentType: string, raw: string): Record<string, unknown> {
  if (!raw) return {};
  if (contentType.startsWith("application/json")) {
    try {
      const parsed: unknown = JSON.parse(raw);
      if (typeof parsed === "object" && parsed !== null) return parsed as Record<string, unknown>;
    } catch {
      // answered below as a body that isn't JSON
    }
    return { unparsed: raw };
  }
  return Object.fromEntries(new URLSearchParams(raw));
}

const SIGN_IN_PAGE =
  "<!DOCTYPE html><html><head><title>Sign in | Slack</title></head>" +
  "<body><h1>Sign in to roster</h1></body></html>";

/** Answers GET / (the sign-in page) and GET /files/<id>/<name>; `id` is set for a file request. */
export function serveFile(
  path: string,
  search: string,
  authorization: string | undefined,
  context: { botToken: string; files: ReadonlyMap<string, StoredFile>; res: ServerResponse },
): { id?: string; authorized: boolean } {
  const { res } = context;
  if (path === "/") {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(SIGN_IN_PAGE);
    return { authorized: false };
  }
  const [, , id = "", ...rest] = path.split("/");
  const authorized = authorization === `Bearer ${context.botToken}`;
  if (!authorized) {
    res.writeHead(302, { location: `/?redir=${encodeURIComponent(path + search)}` });
    res.end();
    return { id, authorized };
  }
  const file = context.files.get(id);
  if (!file || decodeURIComponent(rest.join("/")) !== file.name) {
    res.writeHead(404, { "content-type": "text/plain; charset=utf-8" });
    res.end("File not found");
    return { id, authorized };
  }
  res.writeHead(200, {
    "content-type": file.mimetype,
    "content-length": String(file.bytes.length),
    "content-disposition": `attachment; filename="${encodeURIComponent(file.name)}"`,
  });
  res.end(file.bytes);
  return { id, authorized };
}

/** What the app posted through chat.postMessage. */
export interface SlackMessage {
  channel: string;
  text: string;
  thread_ts?: string;
  ts: string;
  /** Present when the post carried Block Kit, as Slack stored it. */
  blocks?: SlackBlock[];
}

/** What the app sent one user through chat.postEphemeral. */
export interface SlackEphemeral {
  channel: string;
  user: string;
  text: string;
  blocks?: SlackBlock[];
}

/** The stand-in's state a bot-token method reads and changes. */
export interface BotContext {
  channels: string[];
  users: string[];
  store: ChannelHistory;
  nextTs: () => string;
  posted: (message: SlackMessage) => void;
  /** Sends the Socket Mode events for a newly stored message. */
  emit: (channel: string, message: StoredMessage) => void;
  /** Replaces a stored message with its edit and sends message_changed. */
  change: (channel: string, previous: StoredMessage, edited: StoredMessage) => void;
  ephemeral: (message: SlackEphemeral) => void;
  /** users.info's user object, or undefined for a user the workspace doesn't have. */
  user: (id: string) => SlackUser | undefined;
  /** conversations.info's `channel` for a conversation the app is in (slack-conversations.ts). */
  conversation: (channel: string) => Record<string, unknown>;
}

/** What POST /api/<method> needs besides the bot-token methods' state. */
export interface ApiContext extends BotContext {
  botToken: string;
  appToken: string | undefined;
  /** A new Socket Mode link URL for apps.connections.open. */
  linkUrl: () => string;
  /** The error a chat.postMessage is to fail with now, if one is due. */
  postFailure: () => string | undefined;
}

/**
 * The answer (HTTP 200) to POST /api/<method>: apps.connections.open takes
 * the app-level token, everything else the bot token, each refusing the
 * other's as Slack does.
 */
export function apiMethod(
  method: string,
  authorization: string,
  body: Record<string, unknown>,
  context: ApiContext,
): Record<string, unknown> {
  if (!authorization) return { ok: false, error: "not_authed" };
  const appAuth = context.appToken ? `Bearer ${context.appToken}` : undefined;
  const botAuth = `Bearer ${context.botToken}`;
  if (method === "apps.connections.open") {
    if (authorization === botAuth) return { ok: false, error: "not_allowed_token_type" };
    if (authorization !== appAuth) return { ok: false, error: "invalid_auth" };
    return { ok: true, url: context.linkUrl() };
  }
  if (authorization === appAuth) return { ok: false, error: "not_allowed_token_type" };
  if (authorization !== botAuth) return { ok: false, error: "invalid_auth" };
  const failure = method === "chat.postMessage" ? context.postFailure() : undefined;
  if (failure !== undefined) return { ok: false, error: failure };
  return botMethod(method, body, context);
}

/** The answer (always HTTP 200) to a Web API method called with the bot token. */
export function botMethod(
  method: string,
  body: Record<string, unknown>,
  context: BotContext,
): Record<string, unknown> {
  const str = (key: string): string => {
    const value = body[key];
    return typeof value === "string" ? value : "";
  };
  const { channels, store } = context;
  switch (method) {
    case "auth.test":
      return {
        ok: true,
        url: `https://${IDENTITY.teamName}.slack.com/`,
        team: IDENTITY.teamName,
        user: IDENTITY.botName,
        team_id: IDENTITY.teamId,
        user_id: IDENTITY.botUserId,
        bot_id: IDENTITY.botId,
        is_enterprise_install: false,
      };
    case "chat.postMessage": {
      // a user's id posts in the app's DM with them, as Slack does for a bot token
      const channel = dmOfUser(str("channel"), context) ?? str("channel");
      const text = str("text");
      if (!channels.includes(channel)) return { ok: false, error: "channel_not_found" };
      const blocks = readBlocks(body.blocks);
      if (!Array.isArray(blocks)) return blocks;
      // Blocks carry a message without text (text is then only the notification fallback).
      if (!text && blocks.length === 0) return { ok: false, error: "no_text" };
      if (text.length > 40_000) return { ok: false, error: "msg_too_long" };
      const ts = context.nextTs();
      const threadTs = str("thread_ts") || undefined;
      context.posted({
        channel,
        text,
        ts,
        ...(threadTs ? { thread_ts: threadTs } : {}),
        ...(blocks.length > 0 ? { blocks } : {}),
      });
      const parentUser = threadTs ? store.find(channel, threadTs)?.user : undefined;
      const message = botMessage(IDENTITY, { text, ts, thread_ts: threadTs, parentUser, blocks });
      store.add(channel, message);
      // Slack sends the app its own posts as message events too (with bot_id); a listener must skip them.
      context.emit(channel, message);
      return { ok: true, channel, ts, message };
    }
    case "chat.update": {
      const channel = str("channel");
      if (!channels.includes(channel)) return { ok: false, error: "channel_not_found" };
      const previous = store.find(channel, str("ts"));
      if (!previous) return { ok: false, error: "message_not_found" };
      // An app may edit only what it posted itself.
      if (previous.user !== IDENTITY.botUserId) return { ok: false, error: "cant_update_message" };
      // Fields the call leaves out keep their value; `blocks: []` removes the blocks.
      const blocks = body.blocks === undefined ? (previous.blocks ?? []) : readBlocks(body.blocks);
      if (!Array.isArray(blocks)) return blocks;
      const text = body.text === undefined ? previous.text : str("text");
      if (!text && blocks.length === 0) return { ok: false, error: "no_text" };
      if (text.length > 40_000) return { ok: false, error: "msg_too_long" };
      const { blocks: _replaced, ...kept } = previous;
      const message: StoredMessage = {
        ...kept,
        text,
        ...(blocks.length > 0 ? { blocks } : {}),
        edited: { user: IDENTITY.botUserId, ts: context.nextTs() },
      };
      context.change(channel, previous, message);
      return { ok: true, channel, ts: previous.ts, text, message };
    }
    case "chat.postEphemeral": {
      const channel = str("channel");
      const user = str("user");
      if (!channels.includes(channel)) return { ok: false, error: "channel_not_found" };
      if (!/^[UW][A-Z0-9]+$/.test(user)) return { ok: false, error: "user_not_in_channel" };
      const blocks = readBlocks(body.blocks);
      if (!Array.isArray(blocks)) return blocks;
      const text = str("text");
      if (!text && blocks.length === 0) return { ok: false, error: "no_text" };
      context.ephemeral({ channel, user, text, ...(blocks.length > 0 ? { blocks } : {}) });
      // An ephemeral message is never stored, so its ts names nothing a later call could find.
      return { ok: true, message_ts: context.nextTs() };
    }
    case "conversations.open": {
      const users = str("users") ? str("users").split(",") : [];
      const user = users[0];
      if (users.length !== 1 || !user) return { ok: false, error: "users_list_not_supplied" };
      if (!context.users.includes(user)) return { ok: false, error: "user_not_found" };
      const dm = `D${user.slice(1)}`;
      if (!channels.includes(dm)) channels.push(dm);
      return { ok: true, channel: { id: dm } };
    }
    case "conversations.history":
    case "conversations.replies": {
      const channel = str("channel");
      if (!channels.includes(channel)) return { ok: false, error: "channel_not_found" };
      if (method === "conversations.history") return store.history(channel, body);
      if (!str("ts")) return { ok: false, error: "thread_not_found" };
      return store.replies(channel, str("ts"), body);
    }
    case "conversations.info": {
      const channel = str("channel");
      if (!channels.includes(channel)) return { ok: false, error: "channel_not_found" };
      return { ok: true, channel: context.conversation(channel) };
    }
    case "users.info": {
      const user = context.user(str("user"));
      return user ? { ok: true, user } : { ok: false, error: "user_not_found" };
    }
    case "reactions.add":
    case "reactions.remove": {
      // recorded in `requests` like every call; Slack checks the message and the emoji name
      const channel = str("channel");
      if (!channels.includes(channel)) return { ok: false, error: "channel_not_found" };
      if (!store.find(channel, str("timestamp"))) return { ok: false, error: "message_not_found" };
      if (!/^[a-z0-9_+-]+$/.test(str("name"))) return { ok: false, error: "invalid_name" };
      return { ok: true };
    }
    default:
      return { ok: false, error: "unknown_method" };
  }
}

/** The DM channel (D…) Slack posts to when chat.postMessage is given a known user's id. */
function dmOfUser(id: string, context: BotContext): string | undefined {
  if (!/^[UW]/.test(id) || !context.users.includes(id)) return undefined;
  const dm = `D${id.slice(1)}`;
  if (!context.channels.includes(dm)) context.channels.push(dm);
  return dm;
}
