/**
 * TEST DOUBLE for Slack's Web API and Socket Mode, which can't be reached from
 * here. A real HTTP server on loopback speaking the real wire protocol for the
 * parts roster uses:
 * - Web API: POST /api/<method> with form-encoded or JSON bodies, the token as
 *   `Authorization: Bearer …` (or a `token` field), Slack's `{ok, error}`
 *   envelope (HTTP 200 even for errors; 429 with Retry-After when
 *   rate-limited) — chat.postMessage (with Block Kit, slack-blocks.ts),
 *   chat.update, chat.postEphemeral, conversations.open, conversations.history,
 *   conversations.replies, conversations.info (whether a conversation is
 *   private, slack-conversations.ts), reactions.add/remove, users.info
 *   (slack-users.ts),
 *   auth.test (bot token) and apps.connections.open (app-level token),
 *   arguments read from the query string too. Every request is recorded as it
 *   arrived (method, path, headers, parsed body) so tests assert real request
 *   shapes.
 * - Socket Mode on the same server by WebSocket upgrade (slack-socket-mode.ts),
 *   so the real SocketModeClient connects to it.
 * - Uploaded files at their url_private_download, for the bot token only.
 * - Button presses and the response_urls they carry (slack-interactivity.ts).
 * - Slash commands in slash_commands envelopes, answered in the ack or at
 *   their response_url (slack-commands.ts).
 * Test hooks play the workspace's side: `post` is a user posting a message,
 * `press` a user pressing a button, `slash` a user running a slash command,
 * `setUser` who a user is, `setKind` whether a channel is public or private
 * (every message event's channel_type says it), `convert` a channel made
 * private or public as a member does it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import {
  SlackCommands,
  type SlackSlashCommand,
  type SlackSlashResponse,
  type SlashInput,
  type SlashResult,
} from "./slack-commands.ts";
import { type ConversationKind, SlackConversations } from "./slack-conversations.ts";
import { MessageFeed } from "./slack-events.ts";
import { ChannelHistory, TsClock } from "./slack-history.ts";
import {
  type ResponsePost,
  SlackInteractivity,
  type SlackPress,
  type SlackPressResult,
} from "./slack-interactivity.ts";
import {
  IDENTITY,
  type SlackFile,
  type StoredMessage,
  slackFile,
  type UserPost,
  userMessage,
} from "./slack-objects.ts";
import { SocketModeServer, type SocketRecords } from "./slack-socket-mode.ts";
import { type SlackUserInput, SlackUsers } from "./slack-users.ts";
import {
  apiMethod,
  parseBody,
  type Reply,
  type SlackEphemeral,
  type SlackMessage,
  type SlackRequest,
  type StoredFile,
  serveFile,
} from "./slack-web.ts";

export type { SlackBlock } from "./slack-blocks.ts";
export type {
  SlackSlashCommand,
  SlackSlashResponse,
  SlashInput,
  SlashResult,
  SlashStatus,
} from "./slack-commands.ts";
export type { ConversationKind } from "./slack-conversations.ts";
export type { ResponsePost, SlackPress, SlackPressResult } from "./slack-interactivity.ts";
export type { StoredMessage, UserPost } from "./slack-objects.ts";
export type { SlackUser, SlackUserInput } from "./slack-users.ts";
export type { SlackEphemeral, SlackMessage, SlackRequest } from "./slack-web.ts";

export interface SlackStandInOptions {
  botToken: string;
  channels: string[];
  users?: string[];
  /** The app-level token (xapp-…) apps.connections.open takes; without it Socket Mode can't open. */
  appToken?: string;
  /** How long an envelope may go unacked before it is redelivered, or a slash command times out (Slack: 3 s). */
  ackTimeoutMs?: number;
  /** How often the server pings each Socket Mode connection. */
  pingIntervalMs?: number;
}

export class SlackStandIn {
  readonly requests: SlackRequest[] = [];
  readonly messages: SlackMessage[] = [];
  /** What the app sent single users through chat.postEphemeral, in order. */
  readonly ephemerals: SlackEphemeral[] = [];
  /** Every file download attempt, by file id, and whether it carried the bot token. */
  readonly downloads: { id: string; authorized: boolean }[] = [];
  readonly botUserId = IDENTITY.botUserId;
  readonly botId = IDENTITY.botId;
  readonly teamId = IDENTITY.teamId;
  readonly appId = IDENTITY.appId;
  /** apps.connections.open calls, whatever they were answered. */
  opens = 0;
  /** Retry-After seconds for the next requests, answered 429 in order. */
  private readonly limits: number[] = [];
  private postFailure: { after: number; error: string } | undefined;
  private readonly clock = new TsClock();
  private readonly store = new ChannelHistory();
  private readonly conversations = new SlackConversations();
  private readonly files = new Map<string, StoredFile>();
  private readonly socketMode: SocketModeServer;
  private readonly interactivity: SlackInteractivity;
  private readonly feed: MessageFeed;
  private readonly users: SlackUsers;
  private readonly commands: SlackCommands;

  private constructor(
    private readonly server: Server,
    private readonly options: Required<Omit<SlackStandInOptions, "appToken">> & {
      appToken: string | undefined;
    },
  ) {
    this.socketMode = new SocketModeServer({
      appId: IDENTITY.appId,
      ackTimeoutMs: options.ackTimeoutMs,
      pingIntervalMs: options.pingIntervalMs,
      maxRetries: 3,
    });
    this.feed = new MessageFeed(this.store, this.clock, this.socketMode, this.conversations);
    // What the interactivity and slash command halves share with the stand-in.
    const { store, clock, socketMode } = this;
    const shared = { store, clock, socketMode, post: this.feed.add };
    const origin = () => `http://${this.origin}`;
    this.interactivity = new SlackInteractivity({ ...shared, origin, change: this.feed.change });
    this.users = new SlackUsers(options.users);
    const { interactivity, users } = this;
    this.commands = new SlackCommands({
      ...shared,
      channels: options.channels,
      users,
      interactivity,
    });
  }

  static async start(options: SlackStandInOptions): Promise<SlackStandIn> {
    let standIn: SlackStandIn | undefined;
    const server = createServer((req, res) => {
      void standIn?.handle(req, res);
    });
    server.on("upgrade", (req, socket, head) => {
      if (standIn) standIn.socketMode.upgrade(req, socket, head);
      else socket.destroy();
    });
    standIn = new SlackStandIn(server, {
      users: [],
      ackTimeoutMs: 3_000,
      pingIntervalMs: 5_000,
      ...options,
      appToken: options.appToken,
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return standIn;
  }

  private get origin(): string {
    return `127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /**
   * What the `api_base` credential field (WebClient's slackApiUrl) points at.
   * It ends in "/" already; the client adds one only when it is missing.
   */
  get apiBase(): string {
    return `http://${this.origin}/api/`;
  }

  /** Socket Mode connections accepted (each greeted with hello). */
  get connections(): number {
    return this.socketMode.connections;
  }

  /** Socket Mode connections open right now. */
  get connected(): number {
    return this.socketMode.connected;
  }

  /** Event envelopes sent, first deliveries and redeliveries alike. */
  get deliveries(): number {
    return this.socketMode.deliveries;
  }

  /** Events delivered but not yet acked. */
  get unacked(): number {
    return this.socketMode.unacked;
  }

  /** Socket Mode records: envelopes sent, acks received, upgrade refusals, pings. */
  get socket(): SocketRecords {
    return this.socketMode;
  }

  /** After `after` more chat.postMessage calls succeed, the next one is refused with Slack's `error`. */
  failPostAfter(after: number, error = "fatal_error"): void {
    this.postFailure = { after, error };
  }

  /** The next request is answered 429 with this Retry-After, as Slack's rate limiter does. */
  rateLimitNext(retryAfterSeconds: number): void {
    this.limits.push(retryAfterSeconds);
  }

  /**
   * A user posts a message: it is stored in the channel's history and, if a
   * Socket Mode client is connected, sent as a `message` event (plus an
   * `app_mention` event when the text mentions the bot). With nothing
   * connected no envelope is kept for later, as with Slack.
   */
  post(input: UserPost): { ts: string; message: StoredMessage; delivered: boolean } {
    // A user posting in a channel means it exists and the app can read it.
    if (!this.options.channels.includes(input.channel)) this.options.channels.push(input.channel);
    this.users.saw(input.user);
    const parentUser = this.parentUser(input.channel, input.thread_ts);
    const ts = this.clock.next();
    const files = (input.files ?? []).map((file) => this.storeFile(input.user, file));
    const message = userMessage(IDENTITY, { ...input, ts, parentUser }, files);
    const delivered = this.feed.add(input.channel, message);
    return { ts, message, delivered };
  }

  /** Whether a channel is public, private, a group DM or a DM, as Slack says it from now on. */
  setKind(channel: string, kind: ConversationKind): void {
    this.conversations.set(channel, kind);
  }

  /**
   * A member makes a channel private (or public): its kind changes, and Slack
   * posts the notice in it, sent as a `channel_convert_to_private` (or
   * `_public`) message event carrying the new channel_type; `delivered` is
   * false when nothing was connected to send it to (it is never sent again).
   */
  convert(
    channel: string,
    to: "private" | "public",
    user: string,
  ): { ts: string; delivered: boolean } {
    this.conversations.set(channel, to);
    const ts = this.clock.next();
    const message: StoredMessage = {
      type: "message",
      subtype: to === "private" ? "channel_convert_to_private" : "channel_convert_to_public",
      ts,
      user,
      text:
        to === "private"
          ? "made this channel *private*. Now, it can only be viewed or joined by invitation."
          : "made this channel *public*. Any member in this workspace can see and join it.",
      team: IDENTITY.teamId,
    };
    return { ts, delivered: this.feed.add(channel, message) };
  }

  /** A user presses a button in a stored message: block_actions in an `interactive` envelope. */
  press(input: SlackPress): SlackPressResult {
    this.users.saw(typeof input.user === "string" ? input.user : input.user.id);
    return this.interactivity.press(input);
  }

  /** A user runs a slash command: a `slash_commands` envelope, sent once (slack-commands.ts). */
  slash(input: SlashInput): SlashResult {
    return this.commands.slash(input);
  }

  /** Every slash command run, with its status: pending, acked, timed_out or undelivered. */
  get slashCommands(): readonly SlackSlashCommand[] {
    return this.commands.commands;
  }

  /** Answers to slash commands, in the ack or at the response_url, refused ones included. */
  get slashResponses(): readonly SlackSlashResponse[] {
    return this.commands.responses;
  }

  /** Who a user is, for users.info; flags left out are false. */
  setUser(id: string, input: SlackUserInput = {}): void {
    this.users.setUser(id, input);
  }

  /** Posts to response_urls (buttons' and slash commands') accepted ("ok"), in order. */
  get responses(): readonly ResponsePost[] {
    return this.interactivity.responses;
  }

  /** Everything stored for the channel, thread replies included, oldest first. */
  history(channel: string): readonly StoredMessage[] {
    return this.store.all(channel);
  }

  /** Ends every Socket Mode connection abruptly, no close frame (a network drop). */
  dropConnections(): void {
    this.socketMode.dropAll();
  }

  /**
   * While on, apps.connections.open still answers ok with a URL but the
   * WebSocket upgrade is answered HTTP 503. The client then retries on a
   * steady beat (its clientPingTimeout), so a test can hold it disconnected
   * for as long as it likes and see it back soon after turning this off.
   * (A failing apps.connections.open would instead back off longer each try,
   * or stop the client for good on invalid_auth.)
   */
  refuseConnections(on: boolean): void {
    this.socketMode.refuse(on);
  }

  /** Slack's `disconnect` message: refresh_requested, link_disabled, warning, … */
  sendDisconnect(reason: string): void {
    this.socketMode.disconnect(reason);
  }

  /** A raw text frame on every Socket Mode connection. */
  sendGarbage(text: string): void {
    this.socketMode.garbage(text);
  }

  async waitFor<T>(probe: () => T | undefined | null | false, timeoutMs = 5_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = probe();
      if (value !== undefined && value !== null && value !== false) return value;
      if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs}ms`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** Forgets what was recorded and stored; open Socket Mode connections stay. */
  reset(): void {
    this.requests.length = 0;
    this.messages.length = 0;
    this.ephemerals.length = 0;
    this.downloads.length = 0;
    this.limits.length = 0;
    this.postFailure = undefined;
    this.opens = 0;
    this.store.clear();
    this.files.clear();
    this.interactivity.reset();
    this.commands.reset();
    this.users.reset();
    this.socketMode.resetRecords();
  }

  async stop(): Promise<void> {
    await this.socketMode.close();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private parentUser(channel: string, threadTs: string | undefined): string | undefined {
    if (!threadTs) return undefined;
    const parent = this.store.find(channel, threadTs);
    if (!parent) throw new Error(`no message ${threadTs} in ${channel} to reply to`);
    return parent.user;
  }

  private storeFile(user: string, file: NonNullable<UserPost["files"]>[number]): SlackFile {
    const stored = slackFile(`http://${this.origin}`, user, file);
    this.files.set(stored.id, { name: file.name, bytes: file.bytes, mimetype: stored.mimetype });
    return stored;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    const url = new URL(req.url ?? "/", "http://slack.invalid");
    const path = url.pathname;
    const parsed = parseBody(req.headers["content-type"] ?? "", raw);
    // Slack reads a method's arguments from the query string too; the body's win.
    const query = path.startsWith("/api/") ? Object.fromEntries(url.searchParams) : {};
    const body: Record<string, unknown> = { ...query, ...parsed };
    this.requests.push({ method: req.method ?? "", path, headers: req.headers, body });
    // A response_url is Slack's hooks host, not the Web API: no token, no Web API rate limit.
    const hook = /^\/(actions|commands)\/([^/]+)$/.exec(path);
    if (req.method === "POST" && hook?.[2]) {
      this.interactivity.respond(
        hook[1] === "actions" ? "actions" : "commands",
        hook[2],
        body,
        res,
      );
      return;
    }
    if (req.method === "POST" && path === "/api/apps.connections.open") this.opens += 1;

    const reply: Reply = (status, payload, headers = {}) => {
      res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers });
      res.end(JSON.stringify(payload));
    };
    const limit = this.limits.shift();
    if (limit !== undefined) {
      reply(429, { ok: false, error: "ratelimited" }, { "retry-after": String(limit) });
      return;
    }
    if (req.method === "GET" && (path === "/" || path.startsWith("/files/"))) {
      const served = serveFile(path, url.search, req.headers.authorization, {
        botToken: this.options.botToken,
        files: this.files,
        res,
      });
      if (served.id) this.downloads.push({ id: served.id, authorized: served.authorized });
      return;
    }
    if (req.method !== "POST" || !path.startsWith("/api/")) {
      reply(404, { ok: false, error: "unknown_method" });
      return;
    }
    const auth = req.headers.authorization ?? (body.token ? `Bearer ${String(body.token)}` : "");
    reply(
      200,
      apiMethod(path.slice("/api/".length), auth, body, {
        botToken: this.options.botToken,
        appToken: this.options.appToken,
        linkUrl: () => this.socketMode.issueUrl(`ws://${this.origin}`),
        postFailure: () => {
          if (!this.postFailure || this.postFailure.after-- > 0) return undefined;
          const { error } = this.postFailure;
          this.postFailure = undefined;
          return error;
        },
        channels: this.options.channels,
        users: this.options.users,
        store: this.store,
        nextTs: () => this.clock.next(),
        posted: (message) => this.messages.push(message),
        emit: this.feed.emit,
        change: this.feed.change,
        ephemeral: (message) => this.ephemerals.push(message),
        user: (id) => this.users.info(id),
        conversation: (channel) => this.conversations.info(channel),
      }),
    );
  }
}
