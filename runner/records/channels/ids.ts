import { platformTermsOf } from "../../ground/chat/terms.ts";
import { RosterError } from "../../ground/errors.ts";

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
 * Each chat platform builds and reads its own channel ids (services/chat/),
 * each under a prefix of its own; they all keep to the rule above and to one
 * more, read here: a channel with exactly one person in it besides the worker
 * is one of a platform whose every channel is direct (its declaration says
 * so: the terminal's) or has `-dm-` in its id (a chat platform's direct
 * message). Nobody else reads or writes there, which is why such a channel is
 * trusted and wakes the worker on every message unless the operator says
 * otherwise. These ids name folders of user data, so their form never changes.
 */
export function isDirectChannel(id: string): boolean {
  return isChannelId(id) && (platformTermsOf(id)?.direct === true || id.includes("-dm-"));
}
