import type { WebClient } from "@slack/web-api";
import type { RosterPaths } from "../../../ground/config/paths.ts";
import { errorMessage } from "../../../ground/errors.ts";
import { type RoomClass, recordClass } from "../../../records/channels/surface-class.ts";

/**
 * Whether a Slack room is public or private, by Slack's own word, recorded
 * for the channel classes and connection edges that name `public` or
 * `private` (records/channels/surface-class.ts). Every message event Slack
 * sends carries the room's kind (`channel_type`): "channel" is a public
 * channel, "group" a private one, "mpim" a group DM (private to its people),
 * "im" a DM (no room). That word is taken from each event as it arrives, the
 * events of a channel made public or private included (Slack sends
 * `channel_convert_to_private` with "group"), so a room's class follows
 * Slack's at once and no earlier reading can outlast it. A message with no
 * kind (one read from history on catching up) is classed by
 * conversations.info (`is_private`), asked at most once a minute a room and
 * again after the link to Slack was down; a reading that fails forgets the
 * class: unknown admits nothing. A message's text never classes anything.
 */
const FRESH_MS = 60_000;

/** A room's class by an event's channel_type; undefined for a DM or a kind Slack didn't say. */
export function classOfChannelType(channelType: string | undefined): RoomClass | undefined {
  if (channelType === "channel") return "public";
  if (channelType === "group" || channelType === "mpim") return "private";
  return undefined;
}

/** The fields of conversations.info's `channel` that say who may read it. */
export interface ConversationKind {
  is_channel?: boolean;
  is_group?: boolean;
  is_im?: boolean;
  is_mpim?: boolean;
  is_private?: boolean;
}

/** A room's class by conversations.info; undefined for a DM or a conversation of no kind roster knows. */
export function classOfConversation(conversation: ConversationKind): RoomClass | undefined {
  if (conversation.is_im) return undefined;
  if (conversation.is_private || conversation.is_mpim || conversation.is_group) return "private";
  return conversation.is_channel ? "public" : undefined;
}

/** Whether an event's channel_type says a room's kind outright (a DM's "im" says no class). */
const saysRoom = (channelType: string | undefined): boolean =>
  classOfChannelType(channelType) !== undefined;

export class SlackRoomClasses {
  private readonly readAt = new Map<string, number>();
  /** Records are written one after another, in the order Slack's word arrived. */
  private writes: Promise<void> = Promise.resolve();

  constructor(
    private readonly web: WebClient,
    private readonly paths: RosterPaths,
    private readonly note: (text: string) => void,
  ) {}

  /**
   * A link that dropped may have missed the event of a room made private or
   * public (Slack doesn't send it again): every reading taken before the gap
   * is stale, so each room's next message without a kind (one caught up from
   * history) asks conversations.info again.
   */
  reconnected(): void {
    this.readAt.clear();
  }

  /**
   * Takes the class an event carries, at once (before its message waits in
   * its room's queue): a room made private is private from Slack's event on.
   */
  heard(channel: string, channelType: string | undefined): Promise<void> {
    const roomClass = classOfChannelType(channelType);
    if (!roomClass) return this.writes;
    this.readAt.set(channel, Date.now());
    return this.record(channel, roomClass);
  }

  /**
   * The class of the room a message is about to be handed on from: the one
   * its event carries, else conversations.info's (at most once a minute).
   */
  async classify(
    channel: string,
    platformChannel: string,
    channelType: string | undefined,
  ): Promise<void> {
    if (saysRoom(channelType)) return this.heard(channel, channelType);
    const last = this.readAt.get(channel);
    if (last !== undefined && Date.now() - last < FRESH_MS) return this.writes;
    this.readAt.set(channel, Date.now());
    let roomClass: RoomClass | undefined;
    try {
      const reply = await this.web.conversations.info({ channel: platformChannel });
      roomClass = reply.channel ? classOfConversation(reply.channel) : undefined;
      if (!roomClass) this.note(`${channel}: Slack did not say whether it is public or private`);
    } catch (error) {
      this.readAt.delete(channel);
      this.note(
        `${channel}: its class (public or private) could not be read: ${errorMessage(error)}`,
      );
    }
    return this.record(channel, roomClass);
  }

  private record(channel: string, roomClass: RoomClass | undefined): Promise<void> {
    this.writes = this.writes
      .then(() => recordClass(this.paths, channel, roomClass))
      .catch((error: unknown) =>
        this.note(`${channel}: its class was not recorded: ${errorMessage(error)}`),
      );
    return this.writes;
  }
}
