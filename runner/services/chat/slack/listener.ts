import { LogLevel, SocketModeClient } from "@slack/socket-mode";
import { WebClient } from "@slack/web-api";
import type { Credential } from "../../../boundary/gateway/credentials/vault.ts";
import { errorMessage } from "../../../ground/errors.ts";
import { saveAttachment } from "../../listeners/attachments.ts";
import {
  type ChatAdapter,
  type GateOffer,
  type ListenerHost,
  Unauthorised,
} from "../../listeners/child.ts";
import { cursorChannels, readCursor } from "../../listeners/cursors.ts";
import { ChannelQueues, handOver } from "../../listeners/hand-over.ts";
import { slackChannelId } from "./ids.ts";
import { handleSlackPress, postSlackOffer } from "./offers.ts";
import { SlackRoomClasses } from "./room-classes.ts";
import { handleSlackCommand, type SlashAck, type SlashBody } from "./slash.ts";
import { slackRules } from "./vouch.ts";

/**
 * The Slack listener: Slack's own Socket Mode client for events and its Web
 * API client (which waits out 429s by their Retry-After) for history,
 * reactions and failure notices. Channels are `slack-<team>-<channel>`, DMs
 * `slack-<team>-dm-<user>` (Slack's ids in lower case). Every envelope is
 * acked at once; a channel's messages are handled one after another, and
 * the cursor (the last ts handed over) moves only once the server has a
 * message recorded, so Slack's redeliveries and the history read on every
 * reconnect never hand a message over twice. While a turn runs the message
 * wears an :hourglass_flowing_sand: reaction (bots have no typing indicator
 * in Socket Mode). Each room's class, public or private, is Slack's word
 * on it (room-classes.ts), recorded before its message is handed on.
 */
const AUTH_ERRORS = new Set(["invalid_auth", "not_authed", "token_revoked", "account_inactive"]);
const WORKING = "hourglass_flowing_sand";

interface SlackMessageEvent {
  type: string;
  subtype?: string;
  channel: string;
  channel_type?: string;
  user?: string;
  bot_id?: string;
  text?: string;
  ts: string;
  thread_ts?: string;
  files?: { id: string; name: string; size: number; url_private_download?: string }[];
}

/** "1700000000.000100" compared as the two numbers it is. */
export function laterTs(a: string, b: string): boolean {
  const [as = "0", af = "0"] = a.split(".");
  const [bs = "0", bf = "0"] = b.split(".");
  return BigInt(as) !== BigInt(bs)
    ? BigInt(as) > BigInt(bs)
    : BigInt(af.padEnd(6, "0")) > BigInt(bf.padEnd(6, "0"));
}

export class SlackListener implements ChatAdapter {
  private readonly web: WebClient;
  private readonly socket: SocketModeClient;
  private readonly botToken: string;
  private readonly responseOrigin: string;
  private botUser: string | undefined;
  private team = "";
  private readonly queues: ChannelQueues;
  private readonly classes: SlackRoomClasses;

  constructor(
    private readonly host: ListenerHost,
    credential: Credential,
  ) {
    this.queues = new ChannelQueues(host.note);
    const { bot_token: bot, app_token: app } = credential;
    if (typeof bot !== "string" || !bot || typeof app !== "string" || !app)
      throw new Unauthorised('the credential needs "bot_token" and "app_token" fields');
    this.botToken = bot;
    const api = typeof credential.api_base === "string" ? { slackApiUrl: credential.api_base } : {};
    this.responseOrigin = api.slackApiUrl
      ? new URL(api.slackApiUrl).origin
      : "https://hooks.slack.com";
    this.web = new WebClient(bot, {
      ...api,
      logLevel: LogLevel.ERROR,
      retryConfig: { retries: 5, factor: 2, minTimeout: 500, maxTimeout: 10_000, randomize: true },
      timeout: 20_000,
    });
    this.socket = new SocketModeClient({
      appToken: app,
      logLevel: LogLevel.ERROR,
      clientOptions: { ...api, retryConfig: { retries: 10, factor: 1.6, randomize: true } },
    });
    this.classes = new SlackRoomClasses(this.web, host.paths, host.note);
  }

  async start(): Promise<void> {
    this.host.status("connecting");
    try {
      const auth = await this.web.auth.test();
      this.botUser = auth.user_id;
      this.team = (auth.team_id ?? "").toLowerCase();
      this.sayWhereCommandsCount(auth.team_id ?? "");
    } catch (error) {
      const code = (error as { data?: { error?: string } }).data?.error;
      if (code && AUTH_ERRORS.has(code))
        throw new Unauthorised(`Slack answered ${code} to the bot token`);
      throw error;
    }
    this.socket.on("connected", () => {
      this.host.status("connected");
      // what was heard before a gap may be stale: caught-up messages ask Slack again
      this.classes.reconnected();
      void this.catchUp();
    });
    this.socket.on("reconnecting", () =>
      this.host.status("reconnecting", "the Socket Mode link dropped"),
    );
    this.socket.on("disconnected", () => this.host.status("reconnecting", "disconnected"));
    this.socket.on("error", (error: unknown) => this.host.note(errorMessage(error)));
    this.socket.on(
      "message",
      async (args: { event?: SlackMessageEvent; ack?: () => Promise<void> }) => {
        await args.ack?.().catch(() => undefined);
        this.host.event();
        if (args.event) this.enqueue(args.event);
      },
    );
    this.socket.on("interactive", async (args: { ack?: () => Promise<void>; body?: unknown }) => {
      await args.ack?.().catch(() => undefined);
      this.host.event();
      void handleSlackPress(
        this.web,
        this.host,
        this.team,
        args.body ?? {},
        this.responseOrigin,
      ).catch((error: unknown) =>
        this.host.note(`a button press was not answered: ${errorMessage(error)}`),
      );
    });
    this.socket.on("slash_commands", async (args: { ack?: SlashAck; body?: SlashBody }) => {
      this.host.event();
      const ack: SlashAck = args.ack ?? (async () => undefined);
      void handleSlackCommand(
        this.web,
        this.host,
        this.team,
        args.body ?? {},
        (response) => ack(response).catch(() => undefined),
        this.responseOrigin,
      ).catch((error: unknown) =>
        this.host.note(`a command was not answered: ${errorMessage(error)}`),
      );
    });
    try {
      await this.socket.start();
    } catch (error) {
      const code = (error as { data?: { error?: string } }).data?.error;
      if (code && AUTH_ERRORS.has(code))
        throw new Unauthorised(`Slack answered ${code} to the app token`);
      throw error;
    }
  }

  /** The start's line on whose commands are taken and where Slack's word on a person counts. */
  private sayWhereCommandsCount(team: string): void {
    const named = slackRules(this.host.chat()).slack_workspaces ?? [];
    this.host.note(
      `commands are taken only from people of workspace ${team}; ${
        named.includes(team.toUpperCase())
          ? "Slack's word on a person (workspace admin) counts there ([chat.from_platform] slack_workspaces)"
          : "it is not named in org.toml [chat.from_platform] slack_workspaces, so Slack's word on a person (workspace admin) counts nowhere"
      }`,
    );
  }

  offer(offer: GateOffer): Promise<void> {
    return postSlackOffer(this.web, offer);
  }

  async stop(): Promise<void> {
    await this.socket.disconnect().catch(() => undefined);
    await this.queues.drain();
  }

  private channelOf(event: SlackMessageEvent): string {
    const id = event.channel.toLowerCase();
    return slackChannelId(
      event.channel_type === "im" || id.startsWith("d")
        ? { team: this.team, dmUser: event.user ?? id }
        : { team: this.team, channel: id },
    );
  }

  private enqueue(event: SlackMessageEvent): void {
    const channel = this.channelOf(event);
    // Slack's word on the room's kind rides on every event, a channel made private's included
    void this.classes.heard(channel, event.channel_type);
    // edits, deletions, joins …: not messages anyone wrote to the worker
    if (event.subtype && event.subtype !== "file_share") return;
    this.queues.run(channel, () => this.handle(channel, event));
  }

  private async catchUp(): Promise<void> {
    for (const channel of cursorChannels(this.host.paths, this.host.worker, "slack-")) {
      const cursor = readCursor(this.host.paths, this.host.worker, channel);
      if (!cursor) continue;
      try {
        const found: SlackMessageEvent[] = [];
        let page: string | undefined;
        do {
          const reply = await this.web.conversations.history({
            channel: cursor.platform_channel,
            oldest: cursor.last_id,
            limit: 100,
            ...(page ? { cursor: page } : {}),
          });
          for (const message of reply.messages ?? [])
            if (message.ts)
              found.push({
                ...(message as SlackMessageEvent),
                channel: cursor.platform_channel,
                ts: message.ts,
              });
          page = reply.response_metadata?.next_cursor || undefined;
        } while (page);
        found.sort((a, b) => (laterTs(a.ts, b.ts) ? 1 : -1));
        // history carries no channel_type: a room's kind is asked of Slack before its message goes on
        const kind = channel.includes("-dm-") ? { channel_type: "im" } : {};
        for (const message of found) {
          const { channel_type: _none, ...rest } = message;
          this.enqueue({ ...rest, ...kind });
        }
      } catch (error) {
        this.host.note(`${channel}: catching up failed: ${errorMessage(error)}`);
      }
    }
  }

  private async handle(channel: string, event: SlackMessageEvent): Promise<void> {
    const direct = channel.includes("-dm-");
    // a room's class is read before its message meets a class that may name it
    if (!direct) await this.classes.classify(channel, event.channel, event.channel_type);
    const react = (add: boolean) =>
      (add ? this.web.reactions.add : this.web.reactions.remove)
        .call(this.web.reactions, { channel: event.channel, timestamp: event.ts, name: WORKING })
        .catch(() => undefined);
    const user = event.user ?? "";
    return handOver(this.host, {
      channel,
      id: event.ts,
      later: laterTs,
      platformChannel: event.channel,
      fromBot: Boolean(event.bot_id) || !user || user === this.botUser,
      direct,
      mentioned: this.botUser ? (event.text ?? "").includes(`<@${this.botUser}`) : false,
      message: async () => ({
        channel,
        author: user,
        author_id: `slack:${user}`,
        standing: direct ? "dm" : "member",
        text: await this.textOf(channel, event),
      }),
      hooks: {
        onStart: () => void react(true),
        onDone: () => void react(false),
        onFailed: (error) => {
          void react(false);
          void this.web.chat
            .postMessage({
              channel: event.channel,
              text: `:warning: I couldn't finish that just now: ${error}`.slice(0, 3900),
              ...(event.thread_ts ? { thread_ts: event.thread_ts } : {}),
            })
            .catch((failure: unknown) =>
              this.host.note(`a failure notice was not posted: ${errorMessage(failure)}`),
            );
        },
      },
    });
  }

  private async textOf(channel: string, event: SlackMessageEvent): Promise<string> {
    const lines = [event.text ?? ""];
    for (const file of event.files ?? []) {
      if (!file.url_private_download) continue;
      lines.push(
        await saveAttachment(
          this.host.paths,
          channel,
          { id: file.id, filename: file.name, url: file.url_private_download, size: file.size },
          // Slack's file links need the bot token; without it they answer a sign-in page
          { authorization: `Bearer ${this.botToken}` },
        ),
      );
    }
    return lines.filter((line) => line.trim()).join("\n") || "(an empty message)";
  }
}
