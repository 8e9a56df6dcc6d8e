import type { RosterPaths } from "../../ground/config/paths.ts";
import { readDesignations, trustOf } from "../../records/channels/designations.ts";
import { groupOf } from "../../records/channels/links.ts";
import { CHAT_PLATFORMS } from "../chat/platforms.ts";

/**
 * Which channels a run's sends and purpose edits run in without a gate. Two
 * things must hold: the operator trusts the channel (data/channels/
 * settings.json, under the same rules `roster channel` shows — direct
 * channels trusted unless untrusted explicitly, others only when trusted
 * explicitly, none at all when the file can't be read), and the channel is
 * the run's own: its input came from that channel or from surfaces linked
 * with it (data/channels/links.json), and from nowhere else. A run with no
 * channel (a one-shot run, a page it read) or one that carried another
 * conversation is no channel's own: what it proposes for a trusted channel
 * is judged like anything else. Each file is read once per decision.
 */
export function trustedChannels(paths: RosterPaths): (channelId: string) => boolean {
  const designations = readDesignations(paths);
  // a linked channel's trust is shared, never wider than its least trusted member
  return (channelId) => trustOf(paths, designations, channelId);
}

/** The surfaces that are one conversation with a channel: its link group's, or itself alone. */
export function conversationOf(paths: RosterPaths): (channelId: string) => readonly string[] {
  return (channelId) => {
    try {
      const group = groupOf(paths, channelId);
      if (!group) return [channelId];
      // a linked channel's runs carry its members as origins; its name is where its purpose is
      return group.name ? [group.name, ...group.surfaces] : group.surfaces;
    } catch {
      // links.json unreadable: no channel is linked with another (the narrower reading)
      return [channelId];
    }
  };
}

/** What a decision about one run's channels reads: the operator's trust and the links. */
export interface ChannelTrust {
  trusted: (channelId: string) => boolean;
  conversation: (channelId: string) => readonly string[];
}

export function channelTrust(paths: RosterPaths): ChannelTrust {
  return { trusted: trustedChannels(paths), conversation: conversationOf(paths) };
}

/**
 * Whether a channel is the run's own: every origin of the run (its token's,
 * or its run-context's) is that channel or linked with it. No origins, or
 * origins unknown, is no channel's.
 */
export function isOwnChannel(
  channels: Pick<ChannelTrust, "conversation">,
  channelId: string,
  origins: readonly string[] | undefined,
): boolean {
  if (!origins?.length) return false;
  const same = channels.conversation(channelId);
  return origins.every((origin) => origin === channelId || same.includes(origin));
}

/** The run's own channel, and trusted: where its sends and purpose edits run unasked. */
export function trustedForRun(
  channels: ChannelTrust,
  channelId: string,
  origins: readonly string[] | undefined,
): boolean {
  return isOwnChannel(channels, channelId, origins) && channels.trusted(channelId);
}

/** Executors whose payload names the channel it lands in: each chat platform's sender, and purpose. */
export const CHANNEL_EXECUTORS: { has(executor: string): boolean } = {
  has: (executor) =>
    executor === "purpose" || CHAT_PLATFORMS.some((platform) => platform.name === executor),
};
