/**
 * The message feed of the Slack stand-in (slack-stand-in.ts), a TEST DOUBLE
 * for Slack, which can't be reached from here: storing a message in its
 * channel's history and sending the Events API events Slack sends for it
 * over Socket Mode — `message` (plus `app_mention` when a user's text
 * mentions the bot; never for the app's own posts), and the hidden
 * `message_changed` / `message_deleted` an edit or deletion sends, each
 * with the channel_type of its conversation's kind (slack-conversations.ts).
 */
import type { SlackConversations } from "./slack-conversations.ts";
import type { ChannelHistory, TsClock } from "./slack-history.ts";
import {
  appMentionEvent,
  eventCallback,
  IDENTITY,
  mentions,
  messageChangedEvent,
  messageDeletedEvent,
  messageEvent,
  type StoredMessage,
} from "./slack-objects.ts";
import type { SocketModeServer } from "./slack-socket-mode.ts";

export class MessageFeed {
  constructor(
    private readonly store: ChannelHistory,
    private readonly clock: TsClock,
    private readonly socketMode: SocketModeServer,
    private readonly conversations: SlackConversations,
  ) {}

  /** Stores a new message and sends its events; false if nothing is connected. */
  readonly add = (channel: string, message: StoredMessage): boolean => {
    this.store.add(channel, message);
    return this.emit(channel, message);
  };

  /** Sends the message event (and app_mention) for a stored message; false if nothing is connected. */
  readonly emit = (channel: string, message: StoredMessage): boolean => {
    const event = messageEvent(channel, message, this.conversations.channelType(channel));
    const delivered = this.socketMode.deliver(eventCallback(IDENTITY, event), "message");
    // Slack doesn't send app_mention for the app's own messages.
    if (!message.bot_id && mentions(message.text, IDENTITY.botUserId)) {
      const mention = appMentionEvent(channel, message);
      this.socketMode.deliver(eventCallback(IDENTITY, mention), "app_mention");
    }
    return delivered;
  };

  /** An edit (next) or deletion (undefined) of a stored message, and the hidden event Slack sends. */
  readonly change = (
    channel: string,
    previous: StoredMessage,
    next: StoredMessage | undefined,
  ): void => {
    if (next) this.store.replace(channel, next);
    else this.store.remove(channel, previous.ts);
    const ts = this.clock.next();
    const type = this.conversations.channelType(channel);
    const event = next
      ? messageChangedEvent(channel, previous, next, ts, type)
      : messageDeletedEvent(channel, previous, ts, type);
    this.socketMode.deliver(eventCallback(IDENTITY, event), "message");
  };
}
