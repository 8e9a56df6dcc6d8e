import { errorMessage } from "../../ground/errors.ts";
import { classAdmits } from "../../records/channels/channel-class.ts";
import { wakeMode } from "../../records/channels/designations.ts";
import type { ChannelMessage, ListenerHost, TurnHooks } from "./child.ts";
import { readCursor, writeCursor } from "./cursors.ts";

/**
 * What every platform adapter does with one message, the same way: skip it
 * if the cursor is already past it; let it through without waking anyone if
 * a bot wrote it (no loops between bots) or it came from a channel outside
 * the worker's edge of the bot's connection (dropped, as the public roster's
 * listener drops it); keep it as context only in a room
 * in mention mode that doesn't mention the bot; otherwise hand it to the
 * server. The cursor moves after each, so a message is handled once.
 */
export interface PlatformMessage {
  channel: string;
  /** The platform's id for the message, and whether one id is later than another. */
  id: string;
  later: (a: string, b: string) => boolean;
  /** The platform's own channel id (where history is read from). */
  platformChannel: string;
  fromBot: boolean;
  direct: boolean;
  mentioned: boolean;
  /** Built only for messages that are kept (attachments are downloaded here). */
  message: () => Promise<ChannelMessage>;
  hooks: TurnHooks;
}

export async function handOver(host: ListenerHost, incoming: PlatformMessage): Promise<void> {
  const { paths, worker } = host;
  const cursor = readCursor(paths, worker, incoming.channel);
  if (cursor && !incoming.later(incoming.id, cursor.last_id)) return;
  const advance = () =>
    writeCursor(paths, worker, incoming.channel, {
      platform_channel: incoming.platformChannel,
      last_id: incoming.id,
    });
  // outside the channels the bot's connection gives this worker: not its to hear
  if (incoming.fromBot || (host.within && !host.within(incoming.channel))) {
    advance();
    return;
  }
  const message = await incoming.message();
  // outside the worker's wake class, or a room in mention mode not addressed to it: context only
  const outside = host.wake !== undefined && !classAdmits(host.wake, [incoming.channel]);
  const unaddressed =
    !incoming.direct && !incoming.mentioned && wakeMode(paths, incoming.channel) === "mention";
  if (outside || unaddressed) {
    host.record(message);
    advance();
    return;
  }
  await host.deliver(message, incoming.hooks);
  advance();
}

/** One queue per channel: its messages are handled strictly one after another. */
export class ChannelQueues {
  private readonly chains = new Map<string, Promise<void>>();

  constructor(private readonly note: (text: string) => void) {}

  run(channel: string, work: () => Promise<void>): void {
    const next = (this.chains.get(channel) ?? Promise.resolve())
      .then(work)
      .catch((error: unknown) => this.note(`${channel}: ${errorMessage(error)}`));
    this.chains.set(channel, next);
  }

  async drain(): Promise<void> {
    await Promise.allSettled([...this.chains.values()]);
  }
}
