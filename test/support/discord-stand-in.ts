/**
 * TEST DOUBLE for Discord's HTTP API (v10), which can't be reached from here.
 * A real HTTP server on loopback speaking the real wire protocol for just the
 * routes roster uses — POST /api/v10/channels/:id/messages and
 * /api/v10/users/@me/channels — with `Authorization: Bot <token>`, JSON
 * bodies, Discord's error bodies (`{message, code}`), its rate-limit headers,
 * and a 429 the way Discord sends one (Retry-After, X-RateLimit-*, and
 * `{message, retry_after, global}`). Every request is recorded as it arrived
 * (method, path, headers, parsed body) so tests assert real request shapes.
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";

export interface DiscordRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

export interface DiscordMessage {
  id: string;
  channel_id: string;
  content: string;
  nonce?: string;
}

const BUCKET = "d1a2b3c4e5f60718293a4b5c6d7e8f90";

export class DiscordStandIn {
  readonly requests: DiscordRequest[] = [];
  readonly messages: DiscordMessage[] = [];
  /** Retry-After seconds for the next requests, answered 429 in order. */
  private readonly limits: number[] = [];
  private snowflake = 1_300_000_000_000_000_000n;
  private readonly channels: Set<string>;
  private readonly users: Set<string>;

  private constructor(
    private readonly server: Server,
    private readonly token: string,
    channels: string[],
    users: string[],
  ) {
    this.channels = new Set(channels);
    this.users = new Set(users);
  }

  static async start(options: {
    token: string;
    channels: string[];
    users?: string[];
  }): Promise<DiscordStandIn> {
    let standIn: DiscordStandIn | undefined;
    const server = createServer((req, res) => {
      void standIn?.handle(req, res);
    });
    standIn = new DiscordStandIn(server, options.token, options.channels, options.users ?? []);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return standIn;
  }

  /** What the `api_base` credential field (the REST client's `api` option) points at. */
  get apiBase(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/api`;
  }

  /** The next request is answered 429 with this retry_after, as Discord's rate limiter does. */
  rateLimitNext(retryAfterSeconds: number): void {
    this.limits.push(retryAfterSeconds);
  }

  /** The DM channel Discord would answer for a user. */
  dmChannelOf(userId: string): string {
    return String(BigInt(userId) + 7n);
  }

  reset(): void {
    this.requests.length = 0;
    this.messages.length = 0;
    this.limits.length = 0;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private nextId(): string {
    this.snowflake += 1n;
    return String(this.snowflake);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    const path = new URL(req.url ?? "/", "http://discord.invalid").pathname;
    let body: Record<string, unknown> = {};
    try {
      const parsed: unknown = raw ? JSON.parse(raw) : {};
      if (typeof parsed === "object" && parsed !== null) body = parsed as Record<string, unknown>;
    } catch {
      body = { unparsed: raw };
    }
    this.requests.push({ method: req.method ?? "", path, headers: req.headers, body });

    const reply = (status: number, payload: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { "content-type": "application/json", ...headers });
      res.end(JSON.stringify(payload));
    };
    const resetAfter = 1;
    const limitHeaders = (remaining: number) => ({
      "x-ratelimit-limit": "5",
      "x-ratelimit-remaining": String(remaining),
      "x-ratelimit-reset": ((Date.now() + resetAfter * 1000) / 1000).toFixed(3),
      "x-ratelimit-reset-after": resetAfter.toFixed(3),
      "x-ratelimit-bucket": BUCKET,
    });
    const limit = this.limits.shift();
    if (limit !== undefined) {
      reply(
        429,
        { message: "You are being rate limited.", retry_after: limit, global: false },
        {
          ...limitHeaders(0),
          "x-ratelimit-reset-after": limit.toFixed(3),
          "retry-after": String(Math.ceil(limit)),
          "x-ratelimit-scope": "user",
        },
      );
      return;
    }
    if (req.headers.authorization !== `Bot ${this.token}`) {
      reply(401, { message: "401: Unauthorized", code: 0 });
      return;
    }
    if (req.method === "POST" && path === "/api/v10/users/@me/channels") {
      const recipient = typeof body.recipient_id === "string" ? body.recipient_id : "";
      if (!this.users.has(recipient)) {
        reply(404, { message: "Unknown User", code: 10013 });
        return;
      }
      const id = this.dmChannelOf(recipient);
      this.channels.add(id);
      reply(200, {
        id,
        type: 1,
        last_message_id: null,
        flags: 0,
        recipients: [{ id: recipient, username: "owner", discriminator: "0", global_name: null }],
      });
      return;
    }
    const match = /^\/api\/v10\/channels\/([0-9]+)\/messages$/.exec(path);
    if (req.method === "POST" && match?.[1]) {
      const channel = match[1];
      if (!this.channels.has(channel)) {
        reply(404, { message: "Unknown Channel", code: 10003 });
        return;
      }
      const content = typeof body.content === "string" ? body.content : "";
      if (content.length > 2000 || !content.trim()) {
        reply(400, {
          message: "Invalid Form Body",
          code: 50035,
          errors: {
            content: {
              _errors: [
                content.trim()
                  ? { code: "BASE_TYPE_MAX_LENGTH", message: "Must be 2000 or fewer in length." }
                  : { code: "BASE_TYPE_REQUIRED", message: "This field is required" },
              ],
            },
          },
        });
        return;
      }
      const nonce = typeof body.nonce === "string" ? body.nonce : undefined;
      const earlier =
        nonce && body.enforce_nonce === true
          ? this.messages.find((message) => message.nonce === nonce)
          : undefined;
      const message = earlier ?? {
        id: this.nextId(),
        channel_id: channel,
        content,
        ...(nonce ? { nonce } : {}),
      };
      if (!earlier) this.messages.push(message);
      reply(
        200,
        {
          type: 0,
          ...message,
          author: { id: "1290000000000000001", username: "roster", bot: true },
          timestamp: new Date().toISOString(),
          edited_timestamp: null,
          mentions: [],
          attachments: [],
          embeds: [],
          pinned: false,
          tts: false,
        },
        limitHeaders(4),
      );
      return;
    }
    reply(404, { message: "404: Not Found", code: 0 });
  }
}
