/**
 * Discord's channel ids, built and read here alone: a guild channel is
 * `discord-<guild>-<channel>`, a DM `discord-dm-<user>` (a DM belongs to no
 * guild). These ids name folders of user data, so their form never changes.
 */
export const DISCORD_PREFIX = "discord-";

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
