/**
 * TEST DOUBLE for Discord's gateway and HTTP API (v10), which can't be reached
 * from here. A real HTTP server on loopback speaking the real wire protocol for
 * just the parts roster uses, so the real @discordjs/rest and @discordjs/ws
 * clients connect to it unchanged:
 * - HTTP under /api/v10 with `Authorization: Bot <token>`: POST
 *   /channels/:id/messages, POST /users/@me/channels, GET /gateway/bot, GET
 *   /channels/:id/messages (history paging), POST /channels/:id/typing, GET
 *   /channels/:id and GET /guilds/:id/roles (discord-permissions.ts) — JSON
 *   bodies, Discord's error bodies (`{message, code}`), its rate-limit headers,
 *   and a 429 the way Discord sends one (Retry-After, X-RateLimit-*, and
 *   `{message, retry_after, global}`);
 * - unauthenticated CDN downloads of attachments at /attachments/…;
 * - the gateway as a WebSocket upgrade on the same server
 *   (discord-gateway-stand-in.ts);
 * - message components (action rows of buttons, discord-components.ts) and
 *   the interactions a press of one starts, with their token-authenticated
 *   callback and webhook routes (discord-interactions.ts);
 * - application commands: registration (discord-command-registry.ts) and
 *   the interactions running one or autocompleting starts (discord-commands.ts).
 * Every HTTP request is recorded as it arrived (method, path, query, headers,
 * parsed body) so tests assert real request shapes; `post()` plays a user
 * posting in a channel, `press()` one pressing a button, `command()` and
 * `autocomplete()` one using a slash command.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { APIApplicationCommand, APIMessage, APIUser } from "discord-api-types/v10";
import { DiscordChannels } from "./discord-channels.ts";
import { type AutocompleteRun, type CommandRun, DiscordCommands } from "./discord-commands.ts";
import { type ButtonRow, messageBody } from "./discord-components.ts";
import { DiscordGateway } from "./discord-gateway-stand-in.ts";
import {
  type DiscordRequest,
  historyQuery,
  invalidFormBody,
  limitHeaders,
  rateLimited,
  readRequest,
  reply,
  serveAttachment,
} from "./discord-http.ts";
import {
  DiscordInteractions,
  type InteractionResponse,
  type Press,
} from "./discord-interactions.ts";
import {
  apiAttachment,
  apiMessage,
  apiUser,
  type DiscordMessage,
  dmChannel,
  gatewayBot,
  historyPage,
  type PostedMessage,
  Snowflakes,
  type StoredAttachment,
  storedAttachment,
} from "./discord-objects.ts";
import { DiscordPermissions } from "./discord-permissions.ts";

export type { AutocompleteRun, CommandRun, SimpleOptions } from "./discord-commands.ts";
export type { DiscordRequest } from "./discord-http.ts";
export type { InteractionResponse, Press } from "./discord-interactions.ts";
export type { DiscordMessage, PostedMessage } from "./discord-objects.ts";

export class DiscordStandIn {
  readonly requests: DiscordRequest[] = [];
  /** What the bot sent through POST /channels/:id/messages, in order. */
  readonly messages: DiscordMessage[] = [];
  /** POST /channels/:id/typing calls that were answered 204. */
  readonly typing: { channel_id: string; at: number }[] = [];
  /** Paths of attachment downloads served. */
  readonly downloads: string[] = [];
  readonly botUserId: string;
  private readonly botUser: APIUser;
  /** Retry-After seconds for the next requests, answered 429 in order. */
  private readonly limits: number[] = [];
  private readonly ids = new Snowflakes();
  private readonly channels: Set<string>;
  private readonly users: Set<string>;
  /** Every channel's messages, users' and the bot's alike, and the guild a channel is in. */
  private readonly channelMessages: DiscordChannels;
  /** Who may see each guild channel: GET /channels/:id and GET /guilds/:id/roles (`permissions.hide(id)` makes one private). */
  readonly permissions: DiscordPermissions;
  private readonly directory = new Map<string, APIUser>();
  private readonly attachments = new Map<string, StoredAttachment>();
  /** The gateway's own records and hooks (RECONNECT, INVALID_SESSION, close codes, queries). */
  readonly gateway: DiscordGateway;
  private readonly interactions: DiscordInteractions;
  private readonly commands: DiscordCommands;

  private constructor(
    private readonly server: Server,
    private readonly token: string,
    options: {
      channels: string[];
      users: string[];
      botUserId: string;
      heartbeatInterval: number;
      interactionWindowMs: number;
      guilds: string[];
    },
  ) {
    this.channels = new Set(options.channels);
    this.users = new Set(options.users);
    this.botUserId = options.botUserId;
    this.botUser = apiUser({ id: options.botUserId, username: "roster-bot", bot: true });
    this.directory.set(this.botUser.id, this.botUser);
    this.gateway = new DiscordGateway({
      token,
      heartbeatInterval: options.heartbeatInterval,
      botUser: this.botUser,
      // A bot's application id is its user id.
      applicationId: options.botUserId,
      guilds: options.guilds,
      url: () => this.gatewayUrl,
    });
    this.channelMessages = new DiscordChannels(this.gateway, this.botUserId);
    this.permissions = new DiscordPermissions((id) => this.channelMessages.guildOf(id));
    this.interactions = new DiscordInteractions({
      applicationId: options.botUserId,
      botUser: this.botUser,
      ids: this.ids,
      responseWindowMs: options.interactionWindowMs,
      channels: this.channelMessages,
      gateway: this.gateway,
    });
    this.commands = new DiscordCommands(options.botUserId, this.ids, this.interactions);
  }

  static async start(options: {
    token: string;
    channels: string[];
    users?: string[];
    botUserId?: string;
    /** HELLO's heartbeat_interval in ms; Discord's is 41250, tests want it short. */
    heartbeatInterval?: number;
    /** How long an interaction waits for its initial callback; Discord's is 3 s. */
    interactionWindowMs?: number;
    /** The guilds the bot is in (READY lists them). */
    guilds?: string[];
  }): Promise<DiscordStandIn> {
    let standIn: DiscordStandIn | undefined;
    const server = createServer((req, res) => {
      void standIn?.handle(req, res);
    });
    server.on("upgrade", (req, socket, head) => {
      if (standIn) standIn.gateway.upgrade(req, socket, head);
      else socket.destroy();
    });
    standIn = new DiscordStandIn(server, options.token, {
      channels: options.channels,
      users: options.users ?? [],
      botUserId: options.botUserId ?? "1290000000000000001",
      heartbeatInterval: options.heartbeatInterval ?? 41_250,
      interactionWindowMs: options.interactionWindowMs ?? 3_000,
      guilds: options.guilds ?? [],
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return standIn;
  }

  private get origin(): string {
    return `127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** What the `api_base` credential field (the REST client's `api` option) points at. */
  get apiBase(): string {
    return `http://${this.origin}/api`;
  }

  /** The gateway URL GET /gateway/bot and READY's resume_gateway_url hand out. */
  get gatewayUrl(): string {
    return `ws://${this.origin}`;
  }

  /** The next request is answered 429 with this retry_after, as Discord's rate limiter does. */
  rateLimitNext(retryAfterSeconds: number): void {
    this.limits.push(retryAfterSeconds);
  }

  /** The DM channel Discord would answer for a user. */
  dmChannelOf(userId: string): string {
    return String(BigInt(userId) + 7n);
  }

  /** A channel's messages, oldest first. */
  history(channelId: string): readonly APIMessage[] {
    return this.channelMessages.history(channelId);
  }

  /**
   * A user posts in a channel: the message gets a fresh snowflake, joins the
   * channel's history, and goes out as MESSAGE_CREATE to every identified
   * session — or waits in a session's replay buffer if its socket is gone.
   */
  post(message: PostedMessage): APIMessage {
    const channel = message.channel_id;
    // A user can only post in a channel that exists, so posting makes it one the API knows.
    this.channels.add(channel);
    if (message.guild_id) this.channelMessages.setGuild(channel, message.guild_id);
    const author = apiUser(message.author);
    this.directory.set(author.id, author);
    const attachments = (message.attachments ?? []).map((file) => {
      const stored = storedAttachment(channel, this.ids.next(), file);
      this.attachments.set(stored.id, stored);
      return apiAttachment(`http://${this.origin}`, stored);
    });
    const stored = apiMessage({
      id: this.ids.next(),
      channelId: channel,
      author,
      content: message.content,
      mentions: (message.mentions ?? []).map(
        (id) => this.directory.get(id) ?? apiUser({ id, username: `user${id.slice(-4)}` }),
      ),
      attachments,
    });
    this.channelMessages.add(stored);
    return stored;
  }

  /**
   * A user presses a button on a stored message: INTERACTION_CREATE goes to every
   * identified session. Returns the id and token the callback and webhook routes take.
   */
  press(input: Press): { id: string; token: string } {
    return this.interactions.press(input);
  }

  /** The commands the bot registered for a guild, or the global ones, as Discord answers them. */
  registeredCommands(guildId?: string): APIApplicationCommand[] {
    return this.commands.registry.registered(guildId);
  }

  /** A user runs a registered slash command (INTERACTION_CREATE type 2); throws if Discord wouldn't offer it. */
  command(input: CommandRun): { id: string; token: string } {
    return this.commands.command(input);
  }

  /** A user types into an autocomplete option (INTERACTION_CREATE type 4); throws if it isn't one. */
  autocomplete(input: AutocompleteRun): { id: string; token: string } {
    return this.commands.autocomplete(input);
  }

  /** Callbacks (type 8's choices too), @original edits and followups the bot answered interactions with, in order. */
  get interactionResponses(): readonly InteractionResponse[] {
    return this.interactions.responses;
  }

  /** Ends every gateway socket: abruptly (a network drop, 1006) by default, else with `code`. */
  dropConnections(code?: number): void {
    this.gateway.dropConnections(code);
  }

  /** While on, gateway upgrades are answered HTTP 503 so a client stays disconnected. */
  refuseGateway(on: boolean): void {
    this.gateway.refuse(on);
  }

  /** Sends a text frame that isn't JSON to every gateway socket. */
  sendGarbage(text = "{this is not json"): void {
    this.gateway.sendRaw(text);
  }

  /** Sends valid JSON with an opcode Discord doesn't define to every gateway socket. */
  sendUnknownOp(op = 42): void {
    this.gateway.sendRaw(JSON.stringify({ op, d: { unexpected: true }, s: null, t: null }));
  }

  /** Successful IDENTIFYs (each answered READY). */
  get identifies(): number {
    return this.gateway.identifies;
  }

  /** Successful RESUMEs (each answered with the replay and RESUMED). */
  get resumes(): number {
    return this.gateway.resumes;
  }

  /** Identified sessions whose socket is open. */
  get connectedSessions(): number {
    return this.gateway.connectedSessions;
  }

  /** Resolves with the probe's first truthy value, polling; rejects after timeoutMs. */
  async waitFor<T>(probe: () => T | undefined | null | false, timeoutMs = 5_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = probe();
      if (value !== undefined && value !== null && value !== false) return value;
      if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs}ms`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** Resolves once exactly `count` sessions are identified with an open socket. */
  async waitForSessions(count: number, timeoutMs = 5_000): Promise<void> {
    await this.waitFor(() => this.connectedSessions === count, timeoutMs);
  }

  /** Forgets what was recorded and stored; live gateway sessions and their sockets stay. */
  reset(): void {
    this.requests.length = 0;
    this.messages.length = 0;
    this.typing.length = 0;
    this.downloads.length = 0;
    this.limits.length = 0;
    this.channelMessages.clear();
    this.attachments.clear();
    this.interactions.reset();
    this.commands.registry.reset();
    this.gateway.resetRecords();
  }

  async stop(): Promise<void> {
    await this.gateway.close();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { url, body } = await readRequest(req);
    const path = url.pathname;
    if (path.startsWith("/attachments/")) {
      if (serveAttachment(res, url, this.attachments)) this.downloads.push(path);
      return;
    }
    const query = Object.fromEntries(url.searchParams);
    this.requests.push({ method: req.method ?? "", path, query, headers: req.headers, body });
    const limit = this.limits.shift();
    if (limit !== undefined) {
      rateLimited(res, limit);
      return;
    }
    // Interaction routes come before the bot-token check: their token is in the path.
    if (this.interactions.route(req.method ?? "", path, body, res)) return;
    if (req.headers.authorization !== `Bot ${this.token}`) {
      reply(res, 401, { message: "401: Unauthorized", code: 0 });
      return;
    }
    if (this.commands.registry.route(req.method ?? "", path, body, res)) return;
    if (this.permissions.route(req.method ?? "", path, (id) => this.channels.has(id), res)) return;
    if (req.method === "GET" && path === "/api/v10/gateway/bot") {
      reply(res, 200, gatewayBot(this.gatewayUrl), limitHeaders(4));
      return;
    }
    if (req.method === "POST" && path === "/api/v10/users/@me/channels") {
      const recipient = typeof body.recipient_id === "string" ? body.recipient_id : "";
      if (!this.users.has(recipient)) {
        reply(res, 404, { message: "Unknown User", code: 10013 });
        return;
      }
      const id = this.dmChannelOf(recipient);
      this.channels.add(id);
      reply(res, 200, dmChannel(id, recipient));
      return;
    }
    const match = /^\/api\/v10\/channels\/([0-9]+)\/(messages|typing)$/.exec(path);
    const channel = match?.[1];
    const route = `${req.method} ${match?.[2]}`;
    if (!channel) {
      reply(res, 404, { message: "404: Not Found", code: 0 });
    } else if (!["POST messages", "GET messages", "POST typing"].includes(route)) {
      reply(res, 405, { message: "405: Method Not Allowed", code: 0 });
    } else if (!this.channels.has(channel)) {
      reply(res, 404, { message: "Unknown Channel", code: 10003 });
    } else if (route === "POST typing") {
      this.typing.push({ channel_id: channel, at: Date.now() });
      res.writeHead(204, limitHeaders(4));
      res.end();
    } else if (route === "GET messages") {
      const page = historyQuery(url.searchParams);
      if ("field" in page) invalidFormBody(res, page);
      else reply(res, 200, historyPage(this.history(channel), page), limitHeaders(4));
    } else {
      this.sendMessage(res, channel, body);
    }
  }

  /** POST /channels/:id/messages, deduplicated on an enforced nonce as Discord does. */
  private sendMessage(res: ServerResponse, channel: string, body: Record<string, unknown>): void {
    const parts = messageBody(body);
    if ("field" in parts) {
      invalidFormBody(res, parts);
      return;
    }
    const { content, components } = parts;
    const nonce = typeof body.nonce === "string" ? body.nonce : undefined;
    const earlier =
      nonce && body.enforce_nonce === true
        ? this.messages.find((message) => message.nonce === nonce)
        : undefined;
    const posted =
      (earlier && this.history(earlier.channel_id).find((message) => message.id === earlier.id)) ??
      this.sendAsBot(channel, content, nonce, components);
    reply(res, 200, { ...posted, ...(nonce ? { nonce } : {}) }, limitHeaders(4));
  }

  /** The bot's own message: recorded, stored in the history, and echoed on the gateway as Discord does. */
  private sendAsBot(
    channel: string,
    content: string,
    nonce: string | undefined,
    components: ButtonRow[],
  ): APIMessage {
    const message = apiMessage({
      id: this.ids.next(),
      channelId: channel,
      author: this.botUser,
      content,
      mentions: [],
      attachments: [],
      components,
    });
    this.messages.push({
      id: message.id,
      channel_id: channel,
      content,
      ...(nonce ? { nonce } : {}),
      ...(components.length > 0 ? { components } : {}),
    });
    this.channelMessages.add(message, nonce);
    return message;
  }
}
