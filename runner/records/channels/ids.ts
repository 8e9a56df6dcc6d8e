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
 * A chat channel's id, built and read here alone. Discord: a guild channel is
 * `discord-<guild>-<channel>`, a DM `discord-dm-<user>` (a DM belongs to no
 * guild). Slack: `slack-<team>-<channel>`, a DM `slack-<team>-dm-<user>`,
 * Slack's ids in lower case. These ids name folders of user data, so their
 * form never changes.
 */
export type DiscordPlace = { guild: string; channel: string } | { dmUser: string };

export function discordChannelId(place: DiscordPlace): string {
  return "dmUser" in place
    ? `discord-dm-${place.dmUser}`
    : `discord-${place.guild}-${place.channel}`;
}

export function discordPlace(id: string): DiscordPlace | undefined {
  const dm = /^discord-dm-([0-9]+)$/.exec(id);
  if (dm?.[1]) return { dmUser: dm[1] };
  const guild = /^discord-([0-9]+)-([0-9]+)$/.exec(id);
  return guild?.[1] && guild[2] ? { guild: guild[1], channel: guild[2] } : undefined;
}

export type SlackPlace = { team: string } & ({ channel: string } | { dmUser: string });

export function slackChannelId(place: SlackPlace): string {
  const team = place.team.toLowerCase();
  return "dmUser" in place
    ? `slack-${team}-dm-${place.dmUser.toLowerCase()}`
    : `slack-${team}-${place.channel.toLowerCase()}`;
}

export function slackPlace(id: string): SlackPlace | undefined {
  const match = /^slack-([a-z0-9]+)-(dm-)?([a-z0-9]+)$/.exec(id);
  if (!match?.[1] || !match[3]) return undefined;
  return match[2] ? { team: match[1], dmUser: match[3] } : { team: match[1], channel: match[3] };
}

/** Slack's own id (upper case) that a roster Slack id posts to: the channel, or for a DM its user. */
export function slackTarget(id: string): string | undefined {
  const place = slackPlace(id);
  if (!place) return undefined;
  return ("dmUser" in place ? place.dmUser : place.channel).toUpperCase();
}

/**
 * A channel with exactly one person in it besides the worker: a terminal, or
 * a Discord/Slack DM (`discord-dm-<user>`, `slack-<team>-dm-<user>`).
 * Nobody else reads or writes there, which is why such a channel is trusted
 * and wakes the worker on every message unless the operator says otherwise.
 */
export function isDirectChannel(id: string): boolean {
  return isChannelId(id) && (id.startsWith("term-") || id.includes("-dm-"));
}
