/**
 * TEST DOUBLE for Slack's Web API and Socket Mode, which can't be reached from
 * here. A real HTTP server on loopback speaking the real wire protocol for the
 * parts roster uses:
 * - Web API: POST /api/<method> with form-encoded or JSON bodies, the token as
 *   `Authorization: Bearer …` (or a `token` field), Slack's `{ok, error}`
 *   envelope (HTTP 200 even for errors; 429 with Retry-After when
 *   rate-limited) — chat.postMessage (with Block Kit, slack-blocks.ts),
 *   chat.update, chat.postEphemeral, conversations.open, conversations.history,
 *   conversations.replies, reactions.add/remove, auth.test (bot token) and
 *   apps.connections.open (app-level token). Every request is recorded as it
 *   arrived (method, path, headers, parsed body) so tests assert real request
 *   shapes.
 * - Socket Mode on the same server by WebSocket upgrade (slack-socket-mode.ts),
 *   so the real SocketModeClient connects to it.
 * - Uploaded files at their url_private_download, for the bot token only.
 * - Button presses and the response_urls they carry (slack-interactivity.ts).
 * Test hooks play the workspace's side: `post` is a user posting a message,
 * `press` a user pressing a button.
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import { ChannelHistory, TsClock } from "./slack-history.ts";
import {
  type ResponsePost,
  SlackInteractivity,
  type SlackPress,
  type SlackPressResult,
} from "./slack-interactivity.ts";
import {
  appMentionEvent,
  eventCallback,
  IDENTITY,
  mentions,
  messageChangedEvent,
  messageDeletedEvent,
  messageEvent,
  type SlackFile,
  type StoredMessage,
  slackFile,
  userMessage,
} from "./slack-objects.ts";
import { SocketModeServer } from "./slack-socket-mode.ts";
import {
  botMethod,
  parseBody,
  type Reply,
  type SlackEphemeral,
  type SlackMessage,
  type StoredFile,
  serveFile,
} from "./slack-web.ts";

export type { SlackBlock } from "./slack-blocks.ts";
export type { ResponsePost, SlackPress, SlackPressResult } from "./slack-interactivity.ts";
export type { StoredMessage } from "./slack-objects.ts";
export type { SlackEphemeral, SlackMessage } from "./slack-web.ts";

export interface SlackRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

/** A user's message, as a test posts it. */
export interface UserPost {
  channel: string;
  user: string;
  text: string;
  thread_ts?: string;
  files?: { name: string; bytes: Buffer; mimetype?: string }[];
}

export interface SlackStandInOptions {
  botToken: string;
  channels: string[];
  users?: string[];
  /** The app-level token (xapp-…) apps.connections.open takes; without it Socket Mode can't open. */
  appToken?: string;
  /** How long an event envelope may go unacked before it is redelivered (Slack: 3 s). */
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
  private readonly files = new Map<string, StoredFile>();
  private readonly socketMode: SocketModeServer;
  private readonly interactivity: SlackInteractivity;

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
    this.interactivity = new SlackInteractivity({
      origin: () => `http://${this.origin}`,
      store: this.store,
      clock: this.clock,
      socketMode: this.socketMode,
      post: (channel, message) => {
        this.store.add(channel, message);
        this.emit(channel, message);
      },
      change: (channel, previous, next) => this.change(channel, previous, next),
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
  get socket(): Pick<
    SocketModeServer,
    | "envelopes"
    | "acks"
    | "refusedUpgrades"
    | "abandoned"
    | "clientPings"
    | "clientPongs"
    | "strayFrames"
  > {
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
    const parentUser = this.parentUser(input.channel, input.thread_ts);
    const ts = this.clock.next();
    const files = (input.files ?? []).map((file) => this.storeFile(input.user, file));
    const message = userMessage(IDENTITY, { ...input, ts, parentUser }, files);
    this.store.add(input.channel, message);
    const delivered = this.emit(input.channel, message);
    return { ts, message, delivered };
  }

  /** A user presses a button in a stored message: block_actions in an `interactive` envelope. */
  press(input: SlackPress): SlackPressResult {
    return this.interactivity.press(input);
  }

  /** Posts to response_urls that were accepted ("ok"), in order; url_id is the path after /actions/. */
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
    this.socketMode.resetRecords();
  }

  async stop(): Promise<void> {
    await this.socketMode.close();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Sends the message event (and app_mention) for a stored message; false if nothing is connected. */
  private emit(channel: string, message: StoredMessage): boolean {
    const event = messageEvent(channel, message);
    const delivered = this.socketMode.deliver(eventCallback(IDENTITY, event), "message");
    // Slack doesn't send app_mention for the app's own messages.
    if (!message.bot_id && mentions(message.text, IDENTITY.botUserId)) {
      const mention = appMentionEvent(channel, message);
      this.socketMode.deliver(eventCallback(IDENTITY, mention), "app_mention");
    }
    return delivered;
  }

  /** An edit or deletion of a stored message, and the hidden event Slack sends for it. */
  private change(channel: string, previous: StoredMessage, next: StoredMessage | undefined): void {
    if (next) this.store.replace(channel, next);
    else this.store.remove(channel, previous.ts);
    const ts = this.clock.next();
    const event = next
      ? messageChangedEvent(channel, previous, next, ts)
      : messageDeletedEvent(channel, previous, ts);
    this.socketMode.deliver(eventCallback(IDENTITY, event), "message");
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
    const body = parseBody(req.headers["content-type"] ?? "", raw);
    this.requests.push({ method: req.method ?? "", path, headers: req.headers, body });
    // A response_url is Slack's hooks host, not the Web API: no token, no Web API rate limit.
    if (req.method === "POST" && path.startsWith("/actions/")) {
      this.interactivity.respond(path.slice("/actions/".length), body, res);
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
    if (!auth) return reply(200, { ok: false, error: "not_authed" });
    const method = path.slice("/api/".length);
    const appAuth = this.options.appToken ? `Bearer ${this.options.appToken}` : undefined;
    const botAuth = `Bearer ${this.options.botToken}`;

    if (method === "apps.connections.open") {
      if (auth === botAuth) return reply(200, { ok: false, error: "not_allowed_token_type" });
      if (auth !== appAuth) return reply(200, { ok: false, error: "invalid_auth" });
      return reply(200, { ok: true, url: this.socketMode.issueUrl(`ws://${this.origin}`) });
    }
    if (auth === appAuth) return reply(200, { ok: false, error: "not_allowed_token_type" });
    if (auth !== botAuth) return reply(200, { ok: false, error: "invalid_auth" });
    if (method === "chat.postMessage" && this.postFailure && this.postFailure.after-- <= 0) {
      const { error } = this.postFailure;
      this.postFailure = undefined;
      return reply(200, { ok: false, error });
    }
    reply(
      200,
      botMethod(method, body, {
        channels: this.options.channels,
        users: this.options.users,
        store: this.store,
        nextTs: () => this.clock.next(),
        posted: (message) => this.messages.push(message),
        emit: (channel, message) => this.emit(channel, message),
        change: (channel, previous, edited) => this.change(channel, previous, edited),
        ephemeral: (message) => this.ephemerals.push(message),
      }),
    );
  }
}
