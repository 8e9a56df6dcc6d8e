/**
 * Slack's channel ids, built and read here alone: `slack-<team>-<channel>`,
 * a DM `slack-<team>-dm-<user>`, Slack's ids in lower case. These ids name
 * folders of user data, so their form never changes.
 */
export const SLACK_PREFIX = "slack-";

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
