import { assertChannelId } from "../../../records/channels/ids.ts";

/**
 * The terminal channel between one host user and one worker. The user name
 * comes from the host's account, which may hold characters an id can't
 * (uppercase, dots, "@" from a directory service), so it is folded rather
 * than refused: the same person always lands in the same channel.
 */
export const TERM_PREFIX = "term-";

/** A terminal channel id as a request names one (the server's `/turns` for a linked terminal). */
export const TERM_CHANNEL_PATTERN = `^${TERM_PREFIX}[a-z0-9_-]{1,100}$`;

export function termChannelId(user: string, worker: string): string {
  const folded = user.toLowerCase().replace(/[^a-z0-9_-]/g, "_");
  const id = `${TERM_PREFIX}${folded}-${worker}`;
  assertChannelId(id);
  return id;
}
