/**
 * Interactivity for the Slack stand-in (slack-stand-in.ts): a TEST DOUBLE
 * for what Slack does when a user presses a button in an app's message — a
 * `block_actions` payload in an `interactive` Socket Mode envelope — and for
 * the response_url that payload carries. A JSON post there (text, blocks,
 * replace_original, delete_original, response_type) replaces or deletes the
 * pressed message, posts a new one in the channel ("in_channel"), or else
 * answers the presser alone (ephemeral, Slack's default), and is answered
 * with a plain `ok` as Slack answers. Each URL takes five posts within 30
 * minutes, as on Slack; the refusals' wording is the double's, in the style
 * of Slack's webhook errors. A slash command's response_url
 * (slack-commands.ts) is issued here too, under /commands/: it has no
 * message of its own, so replace_original and delete_original there change
 * nothing stored (a choice: what Slack replaces then, an earlier ephemeral
 * answer, isn't kept by the double), and every other post is a new answer.
 * Text over 40,000 characters is refused msg_too_long, as chat.postMessage.
 */
import { randomBytes, randomInt } from "node:crypto";
import type { ServerResponse } from "node:http";
import { elementOf, readBlocks, type SlackBlock } from "./slack-blocks.ts";
import type { ChannelHistory, TsClock } from "./slack-history.ts";
import { botMessage, IDENTITY, type StoredMessage } from "./slack-objects.ts";
import type { SocketModeServer } from "./slack-socket-mode.ts";

/** A user pressing a button, as a test plays it with `press()`. */
export interface SlackPress {
  channel: string;
  message_ts: string;
  action_id: string;
  /** The button's value; the stored button's own is sent, and must match this when both are set. */
  value?: string;
  /** Who presses: a user id (the username is made from it), or both. */
  user: string | { id: string; username: string };
}

/** What a press sent: whether a socket was there to take it, and the payload's ids. */
export interface SlackPressResult {
  delivered: boolean;
  trigger_id: string;
  response_url: string;
  action_ts: string;
}

/** A post to a response_url Slack accepted, body as it arrived; url_id is the path after /actions/ or /commands/. */
export interface ResponsePost {
  url_id: string;
  body: Record<string, unknown>;
}

/** A new answer posted to a response_url (not a replacement or deletion), as Slack shows it. */
export interface ResponseAnswer {
  text: string;
  blocks: SlackBlock[];
  response_type: "ephemeral" | "in_channel";
}

/** What a response_url answers for: a channel, the message it came from if any, and who hears of posts. */
export interface ResponseTarget {
  channel: string;
  messageTs?: string;
  /** Takes each new answer instead of the default (an in_channel one posted, an ephemeral one not kept). */
  onAnswer?: (answer: ResponseAnswer) => void;
}

export type ResponseKind = "actions" | "commands";

/** Slack's trigger ids are three dot-separated parts: digits, digits, hex. */
export function triggerId(): string {
  return `${Date.now()}.${randomInt(1e9)}.${randomBytes(16).toString("hex")}`;
}

export interface InteractivityHost {
  /** The stand-in's own origin, which response_urls point at. */
  origin: () => string;
  store: ChannelHistory;
  clock: TsClock;
  socketMode: SocketModeServer;
  /** Stores a new message from the app and sends its events. */
  post: (channel: string, message: StoredMessage) => void;
  /** Replaces a stored message, or deletes it (undefined), and sends the event Slack sends for that. */
  change: (channel: string, previous: StoredMessage, next: StoredMessage | undefined) => void;
}

interface ResponseUrl extends ResponseTarget {
  kind: ResponseKind;
  at: number;
  uses: number;
}

const RESPONSE_URL_USES = 5;
const RESPONSE_URL_LIFETIME_MS = 30 * 60_000;

function truthy(value: unknown): boolean {
  return value === true || value === "true";
}

/** Slack names a DM channel "directmessage"; a channel's name is its id lower-cased here. */
export function channelName(channel: string): string {
  return channel.startsWith("D") ? "directmessage" : channel.toLowerCase();
}

export class SlackInteractivity {
  /** Posts to response_urls that Slack accepted, in order. */
  readonly responses: ResponsePost[] = [];
  private readonly urls = new Map<string, ResponseUrl>();

  constructor(private readonly host: InteractivityHost) {}

  /**
   * A user presses a button in a stored message: the block_actions payload
   * goes out in an `interactive` envelope, and is sent again until acked.
   * False `delivered` when nothing is connected (Slack shows the presser an
   * error then; nothing is kept for later).
   */
  press(input: SlackPress): SlackPressResult {
    const { channel, message_ts, action_id } = input;
    const message = this.host.store.find(channel, message_ts);
    if (!message) throw new Error(`no message ${message_ts} in ${channel} to press a button on`);
    const found = elementOf(message.blocks ?? [], action_id);
    if (found?.element.type !== "button") {
      throw new Error(`message ${message_ts} has no button ${action_id}`);
    }
    const { element, block_id } = found;
    const stored = typeof element.value === "string" ? element.value : undefined;
    if (input.value !== undefined && stored !== undefined && input.value !== stored) {
      throw new Error(`button ${action_id} carries value ${stored}, not ${input.value}`);
    }
    const value = stored ?? input.value;
    const user =
      typeof input.user === "string"
        ? { id: input.user, username: input.user.toLowerCase() }
        : input.user;
    const response_url = this.issueUrl("actions", { channel, messageTs: message_ts });
    const action_ts = this.host.clock.next();
    const trigger_id = triggerId();
    const payload = {
      type: "block_actions",
      user: { id: user.id, username: user.username, name: user.username, team_id: IDENTITY.teamId },
      api_app_id: IDENTITY.appId,
      token: IDENTITY.verificationToken,
      container: {
        type: "message",
        message_ts,
        channel_id: channel,
        is_ephemeral: false,
        ...(message.thread_ts ? { thread_ts: message.thread_ts } : {}),
      },
      trigger_id,
      team: { id: IDENTITY.teamId, domain: IDENTITY.teamName },
      enterprise: null,
      is_enterprise_install: false,
      channel: { id: channel, name: channelName(channel) },
      message,
      state: { values: {} },
      response_url,
      actions: [
        {
          action_id,
          block_id,
          text: element.text,
          ...(value === undefined ? {} : { value }),
          ...(typeof element.style === "string" ? { style: element.style } : {}),
          type: "button",
          action_ts,
        },
      ],
    };
    const delivered = this.host.socketMode.deliverInteraction(payload);
    return { delivered, trigger_id, response_url, action_ts };
  }

  /** A new response_url on the stand-in's origin, five posts within 30 minutes. */
  issueUrl(kind: ResponseKind, target: ResponseTarget): string {
    const urlId = randomBytes(18).toString("base64url");
    this.urls.set(urlId, { ...target, kind, at: Date.now(), uses: 0 });
    return `${this.host.origin()}/${kind}/${urlId}`;
  }

  /** POST /actions/<id> or /commands/<id>: answered in plain text as Slack answers it. */
  respond(
    kind: ResponseKind,
    urlId: string,
    body: Record<string, unknown>,
    res: ServerResponse,
  ): void {
    const [status, text] = this.answer(kind, urlId, body);
    res.writeHead(status, { "content-type": "text/plain; charset=utf-8" });
    res.end(text);
  }

  reset(): void {
    this.responses.length = 0;
    this.urls.clear();
  }

  private answer(
    kind: ResponseKind,
    urlId: string,
    body: Record<string, unknown>,
  ): [number, string] {
    const url = this.urls.get(urlId);
    if (!url || url.kind !== kind) return [404, "no_service"];
    if (Date.now() - url.at > RESPONSE_URL_LIFETIME_MS) return [404, "expired_url"];
    if (url.uses >= RESPONSE_URL_USES) return [404, "used_url"];
    // Slack also takes the JSON as a form field named payload.
    const message = typeof body.payload === "string" ? parsePayload(body.payload) : body;
    if (!message || "unparsed" in message) return [400, "invalid_payload"];
    const blocks = readBlocks(message.blocks);
    if (!Array.isArray(blocks)) return [400, blocks.error];
    const text = typeof message.text === "string" ? message.text : "";
    const remove = truthy(message.delete_original);
    if (!remove && !text && blocks.length === 0) return [400, "no_text"];
    if (text.length > 40_000) return [400, "msg_too_long"];
    url.uses += 1;
    this.responses.push({ url_id: urlId, body });
    const replace = truthy(message.replace_original);
    if (url.messageTs !== undefined && (remove || replace)) {
      const original = this.host.store.find(url.channel, url.messageTs);
      if (original) {
        const { blocks: _replaced, ...kept } = original;
        const next = remove ? undefined : { ...kept, text, ...(blocks.length ? { blocks } : {}) };
        this.host.change(url.channel, original, next);
      }
    } else if (!remove) {
      const response_type = message.response_type === "in_channel" ? "in_channel" : "ephemeral";
      if (url.onAnswer) url.onAnswer({ text, blocks, response_type });
      else if (response_type === "in_channel") {
        const ts = this.host.clock.next();
        this.host.post(url.channel, botMessage(IDENTITY, { text, ts, blocks }));
      }
      // An ephemeral answer: only the user sees it, and nothing is stored.
    }
    return [200, "ok"];
  }
}

function parsePayload(raw: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(raw);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
