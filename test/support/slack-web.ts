/**
 * HTTP pieces of the Slack stand-in (slack-stand-in.ts): request bodies the
 * way Slack's Web API reads them, the Web API methods that take the bot
 * token, and private file downloads the way Slack
 * serves url_private_download — the bytes for the bot token, and for anyone
 * else a redirect to the workspace sign-in page (an HTML 200 once followed),
 * which is why a downloader must check what it got rather than trust a 200.
 */
import type { ServerResponse } from "node:http";
import type { ChannelHistory } from "./slack-history.ts";
import { botMessage, IDENTITY, type StoredMessage } from "./slack-objects.ts";

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

/** WebClient sends form-encoded bodies; Slack also accepts JSON. */
export function parseBody(contentType: string, raw: string): Record<string, unknown> {
  if (!raw) return {};
  if (contentType.startsWith("application/json")) {
    const parsed: unknown = JSON.parse(raw);
    return typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>) : {};
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
      const channel = str("channel");
      const text = str("text");
      if (!channels.includes(channel)) return { ok: false, error: "channel_not_found" };
      if (!text) return { ok: false, error: "no_text" };
      if (text.length > 40_000) return { ok: false, error: "msg_too_long" };
      const ts = context.nextTs();
      const threadTs = str("thread_ts") || undefined;
      context.posted({ channel, text, ts, ...(threadTs ? { thread_ts: threadTs } : {}) });
      const parentUser = threadTs ? store.find(channel, threadTs)?.user : undefined;
      const message = botMessage(IDENTITY, { text, ts, thread_ts: threadTs, parentUser });
      store.add(channel, message);
      // Slack sends the app its own posts as message events too (with bot_id); a listener must skip them.
      context.emit(channel, message);
      return { ok: true, channel, ts, message };
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
