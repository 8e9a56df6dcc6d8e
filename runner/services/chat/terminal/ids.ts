import { assertChannelId } from "../../../records/channels/ids.ts";

/**
 * The terminal channel between one host user and one worker. The user name
 * comes from the host's account, which may hold characters an id can't
 * (uppercase, dots, "@" from a directory service), so it is folded rather
 * than refused: the same person always lands in the same channel.
 */
export const TERM_PREFIX = "term-";

export function termChannelId(user: string, worker: string): string {
  const folded = user.toLowerCase().replace(/[^a-z0-9_-]/g, "_");
  const id = `${TERM_PREFIX}${folded}-${worker}`;
  assertChannelId(id);
  return id;
}
