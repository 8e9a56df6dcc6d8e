import { RosterError } from "../errors.ts";

/**
 * Channel ids. An id names a folder under data/channels/ and a mountpoint in
 * a box, so it is kept to characters that are safe as one path component:
 * lowercase letters, digits, ".", "_" and "-", never starting with a dot
 * (no "..", no hidden folders) and short enough for any filesystem.
 */
const CHANNEL_ID = /^[a-z0-9][a-z0-9._-]{0,127}$/;

export const CHANNEL_ID_RULE =
  'lowercase letters, digits, ".", "_" and "-", starting with a letter or digit, at most 128 characters';

export function isChannelId(id: string): boolean {
  return CHANNEL_ID.test(id);
}

export function assertChannelId(id: string): void {
  if (!isChannelId(id))
    throw new RosterError(`"${id}" is not a channel id: ${CHANNEL_ID_RULE}`, { exitCode: 2 });
}

/**
 * The terminal channel between one host user and one worker. The user name
 * comes from the host's account, which may hold characters an id can't
 * (uppercase, dots, "@" from a directory service), so it is folded rather
 * than refused: the same person always lands in the same channel.
 */
export function termChannelId(user: string, worker: string): string {
  const folded = user.toLowerCase().replace(/[^a-z0-9_-]/g, "_");
  const id = `term-${folded}-${worker}`;
  assertChannelId(id);
  return id;
}

/**
 * A channel with exactly one person in it besides the worker: a terminal, or
 * a Discord/Slack DM (`discord-<guild>-dm-<user>`, `slack-<team>-dm-<user>`).
 * Nobody else reads or writes there, which is why such a channel is trusted
 * and wakes the worker on every message unless the operator says otherwise.
 */
export function isDirectChannel(id: string): boolean {
  return isChannelId(id) && (id.startsWith("term-") || id.includes("-dm-"));
}
