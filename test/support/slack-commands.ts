/**
 * Slash commands for the Slack stand-in (slack-stand-in.ts): a TEST DOUBLE
 * for what Slack does when a user runs an app's slash command over Socket
 * Mode, which can't be reached from here, on its real wire protocol — the
 * command's fields (token, team_id, team_domain, channel_id, channel_name,
 * user_id, user_name, command, text, api_app_id, is_enterprise_install,
 * response_url, trigger_id; all strings, as Slack sends them) as the payload
 * of a `slash_commands` envelope with accepts_response_payload true
 * (slack-socket-mode.ts). The ack's payload is the immediate answer: `text`,
 * `blocks`, `response_type` "ephemeral" (the default: only the user sees it)
 * or "in_channel" (posted into the channel as the app's bot message, whose
 * message event the app gets like any of its posts). The response_url
 * (slack-interactivity.ts, under /commands/) takes five more answers within
 * 30 minutes.
 *
 * Choices where Slack isn't observable from here: a command is sent once —
 * unacked within the ack timeout it is recorded `timed_out` and never sent
 * again (Slack shows the user an error), and an ack after that settles
 * nothing; with nothing connected it is `undelivered` (Slack's
 * dispatch_failed). An ack with no text and no blocks shows nothing. An
 * answer Slack would refuse (blocks per slack-blocks.ts, empty blocks with no
 * text, text over 40,000 characters) is recorded with `refused` (the user
 * sees an error) and shown nowhere. The first in_channel answer also puts
 * the user's command ("/cmd text") into the channel's history as the user's
 * message, right before the answer; no message event is sent for that echo.
 * A channel_name is the id lower-cased ("directmessage" for a D… channel).
 */
import { readBlocks, type SlackBlock } from "./slack-blocks.ts";
import type { ChannelHistory, TsClock } from "./slack-history.ts";
import {
  channelName,
  type ResponseAnswer,
  type SlackInteractivity,
  triggerId,
} from "./slack-interactivity.ts";
import { botMessage, IDENTITY, type StoredMessage, userMessage } from "./slack-objects.ts";
import type { SocketModeServer } from "./slack-socket-mode.ts";
import type { SlackUsers } from "./slack-users.ts";
import type { SlackEphemeral } from "./slack-web.ts";

/** A user running a slash command, as a test plays it with `slash()`. */
export interface SlashInput {
  /** The command with its slash, e.g. "/approvals". */
  command: string;
  text: string;
  /** The user's id, e.g. U0ANA. */
  user: string;
  /** The channel's id; a D… id is a DM. */
  channel: string;
  user_name?: string;
  channel_name?: string;
  /** The workspace the command is run in, as the payload's team_id says; this one's unless set. */
  team_id?: string;
}

/** What `slash()` sent; envelope_id is undefined when nothing was connected to take it. */
export interface SlashResult {
  delivered: boolean;
  trigger_id: string;
  envelope_id: string | undefined;
  response_url: string;
}

/** Where a command stands: sent and waiting, acked in time, timed out, or never sent. */
export type SlashStatus = "pending" | "acked" | "timed_out" | "undelivered";

/** A command a user ran, and what became of it. */
export interface SlackSlashCommand {
  trigger_id: string;
  envelope_id: string | undefined;
  command: string;
  text: string;
  user: string;
  channel: string;
  response_url: string;
  status: SlashStatus;
}

/** An answer to a command, in the ack or through its response_url; channel/user/text/blocks as SlackEphemeral. */
export interface SlackSlashResponse extends SlackEphemeral {
  trigger_id: string;
  command: string;
  via: "ack" | "response_url";
  response_type: "ephemeral" | "in_channel";
  /** Why Slack refused the answer (it was shown nowhere). */
  refused?: string;
  /** The ts of the bot message an in_channel answer became. */
  ts?: string;
}

export interface CommandsHost {
  /** Known channel ids; a command run in one the stand-in didn't know adds it. */
  channels: string[];
  users: SlackUsers;
  store: ChannelHistory;
  clock: TsClock;
  socketMode: SocketModeServer;
  interactivity: SlackInteractivity;
  /** Stores a new message from the app and sends its events. */
  post: (channel: string, message: StoredMessage) => void;
}

const MAX_TEXT = 40_000;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export class SlackCommands {
  readonly commands: SlackSlashCommand[] = [];
  readonly responses: SlackSlashResponse[] = [];
  /** trigger_ids of commands whose in_channel echo is already in history. */
  private readonly echoed = new Set<string>();

  constructor(private readonly host: CommandsHost) {}

  slash(input: SlashInput): SlashResult {
    const { command, text, user, channel } = input;
    if (!/^\/[^\s/]+$/.test(command)) throw new Error(`not a slash command: ${command}`);
    if (!this.host.channels.includes(channel)) this.host.channels.push(channel);
    this.host.users.saw(user);
    const trigger_id = triggerId();
    const record: SlackSlashCommand = {
      trigger_id,
      envelope_id: undefined,
      command,
      text,
      user,
      channel,
      response_url: "",
      status: "undelivered",
    };
    record.response_url = this.host.interactivity.issueUrl("commands", {
      channel,
      onAnswer: (answer) => this.answered(record, "response_url", answer),
    });
    const payload = {
      token: IDENTITY.verificationToken,
      team_id: input.team_id ?? IDENTITY.teamId,
      team_domain: IDENTITY.teamName,
      channel_id: channel,
      channel_name: channel.startsWith("D")
        ? "directmessage"
        : (input.channel_name ?? channelName(channel)),
      user_id: user,
      user_name: input.user_name ?? this.host.users.name(user),
      command,
      text,
      api_app_id: IDENTITY.appId,
      is_enterprise_install: "false",
      response_url: record.response_url,
      trigger_id,
    };
    this.commands.push(record);
    const delivered = this.host.socketMode.deliverCommand(payload, {
      onAck: (ackPayload) => {
        record.status = "acked";
        this.acked(record, ackPayload);
      },
      onTimeout: () => {
        record.status = "timed_out";
      },
    });
    if (delivered) {
      record.status = "pending";
      const sent = this.host.socketMode.envelopes.findLast((e) => e.event_id === trigger_id);
      record.envelope_id = sent?.envelope_id;
    }
    return {
      delivered,
      trigger_id,
      envelope_id: record.envelope_id,
      response_url: record.response_url,
    };
  }

  reset(): void {
    this.commands.length = 0;
    this.responses.length = 0;
    this.echoed.clear();
  }

  /** The ack's payload as the command's immediate answer, or its refusal. */
  private acked(record: SlackSlashCommand, payload: unknown): void {
    if (!isRecord(payload) || (payload.text === undefined && payload.blocks === undefined)) return;
    const text = typeof payload.text === "string" ? payload.text : "";
    const response_type = payload.response_type === "in_channel" ? "in_channel" : "ephemeral";
    const blocks = readBlocks(payload.blocks);
    let refused: string | undefined;
    if (!Array.isArray(blocks)) refused = blocks.error;
    else if (!text && blocks.length === 0) refused = "no_text";
    else if (text.length > MAX_TEXT) refused = "msg_too_long";
    if (refused !== undefined || !Array.isArray(blocks)) {
      this.responses.push({
        ...this.base(record, "ack", response_type, text, []),
        refused: refused ?? "invalid_blocks",
      });
      return;
    }
    this.answered(record, "ack", { text, blocks, response_type });
  }

  /**
   * Records an answer Slack shows. An in_channel one is posted as the app's
   * message, after the echo of the command when it is the command's first.
   */
  private answered(
    record: SlackSlashCommand,
    via: SlackSlashResponse["via"],
    answer: ResponseAnswer,
  ): void {
    const { text, blocks, response_type } = answer;
    const response = this.base(record, via, response_type, text, blocks);
    this.responses.push(response);
    if (response_type !== "in_channel") return;
    const { channel, user, command } = record;
    if (!this.echoed.has(record.trigger_id)) {
      this.echoed.add(record.trigger_id);
      const typed = record.text ? `${command} ${record.text}` : command;
      const ts = this.host.clock.next();
      this.host.store.add(channel, userMessage(IDENTITY, { user, text: typed, ts }, []));
    }
    response.ts = this.host.clock.next();
    this.host.post(channel, botMessage(IDENTITY, { text, ts: response.ts, blocks }));
  }

  private base(
    record: SlackSlashCommand,
    via: SlackSlashResponse["via"],
    response_type: SlackSlashResponse["response_type"],
    text: string,
    blocks: SlackBlock[],
  ): SlackSlashResponse {
    return {
      trigger_id: record.trigger_id,
      command: record.command,
      channel: record.channel,
      user: record.user,
      via,
      response_type,
      text,
      ...(blocks.length > 0 ? { blocks } : {}),
    };
  }
}
