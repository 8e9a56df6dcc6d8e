import type { RosterPaths } from "../../ground/config/paths.ts";
import { designationOf, readDesignations } from "../../records/channels/designations.ts";
import { CHAT_PLATFORMS } from "../chat/platforms.ts";

/**
 * Which channels a worker's sends and purpose edits run in without a gate:
 * the operator's designations (data/channels/settings.json) under the same
 * rules `roster channel` shows — direct channels trusted unless untrusted
 * explicitly, others only when trusted explicitly, none at all when the file
 * can't be read. The file is read once, so one decision sees one version.
 */
export function trustedChannels(paths: RosterPaths): (channelId: string) => boolean {
  const designations = readDesignations(paths);
  return (channelId) => designationOf(designations, channelId).trusted;
}

/** Executors whose payload names the channel it lands in: each chat platform's sender, and purpose. */
export const CHANNEL_EXECUTORS: ReadonlySet<string> = new Set([
  ...CHAT_PLATFORMS.map((platform) => platform.name),
  "purpose",
]);
