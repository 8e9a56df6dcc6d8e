/**
 * TEST DOUBLE for Slack's Web API, which can't be reached from here. A real
 * HTTP server on loopback speaking the real wire protocol for just the methods
 * roster uses — POST /api/chat.postMessage and /api/conversations.open, with
 * form-encoded or JSON bodies, `Authorization: Bearer <bot token>`, and Slack's
 * `{ok, error}` envelope (HTTP 200 even for errors; 429 with Retry-After when
 * rate-limited). Every request is recorded as it arrived (method, path,
 * headers, parsed body) so tests assert real request shapes.
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";

export interface SlackRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

export interface SlackMessage {
  channel: string;
  text: string;
  thread_ts?: string;
  ts: string;
}

export class SlackStandIn {
  readonly requests: SlackRequest[] = [];
  readonly messages: SlackMessage[] = [];
  /** Retry-After seconds for the next requests, answered 429 in order. */
  private readonly limits: number[] = [];
  private seq = 0;

  private constructor(
    private readonly server: Server,
    private readonly options: { botToken: string; channels: string[]; users: string[] },
  ) {}

  static async start(options: {
    botToken: string;
    channels: string[];
    users?: string[];
  }): Promise<SlackStandIn> {
    let standIn: SlackStandIn | undefined;
    const server = createServer((req, res) => {
      void standIn?.handle(req, res);
    });
    standIn = new SlackStandIn(server, { users: [], ...options });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return standIn;
  }

  /** What the `api_base` credential field (WebClient's slackApiUrl) points at. */
  get apiBase(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/api/`;
  }

  /** The next request is answered 429 with this Retry-After, as Slack's rate limiter does. */
  rateLimitNext(retryAfterSeconds: number): void {
    this.limits.push(retryAfterSeconds);
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

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    const path = new URL(req.url ?? "/", "http://slack.invalid").pathname;
    const body = parseBody(req.headers["content-type"] ?? "", raw);
    this.requests.push({ method: req.method ?? "", path, headers: req.headers, body });

    const reply = (status: number, payload: Record<string, unknown>, headers = {}) => {
      res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers });
      res.end(JSON.stringify(payload));
    };
    const limit = this.limits.shift();
    if (limit !== undefined) {
      reply(429, { ok: false, error: "ratelimited" }, { "retry-after": String(limit) });
      return;
    }
    if (req.method !== "POST" || !path.startsWith("/api/")) {
      reply(404, { ok: false, error: "unknown_method" });
      return;
    }
    const auth = req.headers.authorization ?? (body.token ? `Bearer ${String(body.token)}` : "");
    if (!auth) return reply(200, { ok: false, error: "not_authed" });
    if (auth !== `Bearer ${this.options.botToken}`)
      return reply(200, { ok: false, error: "invalid_auth" });

    const method = path.slice("/api/".length);
    if (method === "chat.postMessage") {
      const channel = typeof body.channel === "string" ? body.channel : "";
      const text = typeof body.text === "string" ? body.text : "";
      if (!this.options.channels.includes(channel))
        return reply(200, { ok: false, error: "channel_not_found" });
      if (!text) return reply(200, { ok: false, error: "no_text" });
      if (text.length > 40_000) return reply(200, { ok: false, error: "msg_too_long" });
      this.seq += 1;
      const ts = `${Math.floor(Date.now() / 1000)}.${String(this.seq).padStart(6, "0")}`;
      const threadTs = typeof body.thread_ts === "string" ? body.thread_ts : undefined;
      this.messages.push({ channel, text, ts, ...(threadTs ? { thread_ts: threadTs } : {}) });
      return reply(200, {
        ok: true,
        channel,
        ts,
        message: {
          type: "message",
          user: "U0ROSTERBOT",
          bot_id: "B0ROSTERBOT",
          text,
          ts,
          ...(threadTs ? { thread_ts: threadTs } : {}),
        },
      });
    }
    if (method === "conversations.open") {
      const users = typeof body.users === "string" ? body.users.split(",") : [];
      const user = users[0];
      if (users.length !== 1 || !user)
        return reply(200, { ok: false, error: "users_list_not_supplied" });
      if (!this.options.users.includes(user))
        return reply(200, { ok: false, error: "user_not_found" });
      const dm = `D${user.slice(1)}`;
      if (!this.options.channels.includes(dm)) this.options.channels.push(dm);
      return reply(200, { ok: true, channel: { id: dm } });
    }
    reply(200, { ok: false, error: "unknown_method" });
  }
}

/** WebClient sends form-encoded bodies; Slack also accepts JSON. */
function parseBody(contentType: string, raw: string): Record<string, unknown> {
  if (!raw) return {};
  if (contentType.startsWith("application/json")) {
    const parsed: unknown = JSON.parse(raw);
    return typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>) : {};
  }
  return Object.fromEntries(new URLSearchParams(raw));
}
