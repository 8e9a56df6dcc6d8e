/**
 * The real Slack clients pointed at a Slack stand-in (a TEST DOUBLE for
 * Slack, which can't be reached from here), as roster's listener builds
 * them, for tests that hold the double to the protocol those clients speak:
 * WebClients, and SocketModeClients that record (and ack, slash commands
 * with an answer if asked) what they receive and are disconnected together
 * at the end of a test.
 */
import { LogLevel, SocketModeClient } from "@slack/socket-mode";
import { WebClient } from "@slack/web-api";
import type { SlackStandIn } from "./slack-stand-in.ts";

/** What SocketModeClient hands an `events_api` listener (its emitter leaves it untyped). */
export interface EventArgs {
  ack: (response?: Record<string, unknown>) => Promise<void>;
  envelope_id: string;
  body: { event_id: string } & Record<string, unknown>;
  event: Record<string, unknown> & { type: string; ts: string };
  retry_num: number;
  retry_reason: string;
}

/** What it hands an `interactive` listener: the envelope's payload as `body`, and no retry fields. */
export interface InteractiveArgs {
  ack: (response?: Record<string, unknown>) => Promise<void>;
  envelope_id: string;
  body: Record<string, unknown> & { type: string };
  accepts_response_payload: boolean;
}

/** What it hands a `slash_commands` listener: the command's fields as `body`. */
export interface SlashArgs {
  ack: (response?: Record<string, unknown>) => Promise<void>;
  envelope_id: string;
  body: Record<string, string>;
  accepts_response_payload: boolean;
}

export interface SocketClientOptions {
  appToken?: string;
  /** Whether to ack an event (default: all). */
  ackWhen?: (args: EventArgs) => boolean;
  /** Whether to ack an interaction (default: all). */
  ackInteractionWhen?: (args: InteractiveArgs) => boolean;
  /** The ack's payload for a slash command: undefined acks bare, false doesn't ack (default: bare). */
  answerCommand?: (args: SlashArgs) => Record<string, unknown> | undefined | false;
}

export class SlackClients {
  private readonly clients: SocketModeClient[] = [];

  constructor(
    private readonly standIn: SlackStandIn,
    private readonly tokens: { bot: string; app: string },
    /** The client waits this long before each reconnect and pings three times as often. */
    private readonly clientPingTimeout: number,
  ) {}

  web(token = this.tokens.bot): WebClient {
    return new WebClient(token, {
      slackApiUrl: this.standIn.apiBase,
      retryConfig: { retries: 0 },
      logLevel: LogLevel.ERROR,
    });
  }

  /** A Socket Mode client recording message and app_mention events, interactions and slash commands. */
  socket(options: SocketClientOptions = {}) {
    const client = new SocketModeClient({
      appToken: options.appToken ?? this.tokens.app,
      clientOptions: { slackApiUrl: this.standIn.apiBase },
      logLevel: LogLevel.ERROR,
      clientPingTimeout: this.clientPingTimeout,
    });
    this.clients.push(client);
    const events: EventArgs[] = [];
    const interactions: InteractiveArgs[] = [];
    const commands: SlashArgs[] = [];
    const record = async (args: EventArgs) => {
      events.push(args);
      if (options.ackWhen?.(args) ?? true) await args.ack();
    };
    client.on("message", record);
    client.on("app_mention", record);
    client.on("interactive", async (args: InteractiveArgs) => {
      interactions.push(args);
      if (options.ackInteractionWhen?.(args) ?? true) await args.ack();
    });
    client.on("slash_commands", async (args: SlashArgs) => {
      commands.push(args);
      const answer = options.answerCommand?.(args);
      if (answer !== false) await args.ack(answer);
    });
    return { client, events, interactions, commands };
  }

  async disconnect(): Promise<void> {
    for (const client of this.clients.splice(0)) await client.disconnect();
  }
}

/** Block Kit for an offer: a prompt, then an actions block of buttons (label: action_id), one value. */
export function buttonBlocks(prompt: string, buttons: Record<string, string>, value: string) {
  const elements = Object.entries(buttons).map(([text, action_id]) => ({
    type: "button" as const,
    text: { type: "plain_text" as const, text },
    action_id,
    value,
  }));
  return [
    { type: "section" as const, text: { type: "mrkdwn" as const, text: prompt } },
    { type: "actions" as const, elements },
  ];
}

/** POSTs JSON as an app posts to a response_url: the answer's status and text. */
export async function postJson(url: string, body: unknown): Promise<[number, string]> {
  const answer = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return [answer.status, await answer.text()];
}
