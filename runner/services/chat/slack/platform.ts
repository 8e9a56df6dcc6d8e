import type { ChatPlatform } from "../platform.ts";
import { SLACK_PREFIX, slackPlace } from "./ids.ts";
import { slackOperatorDm, slackSender } from "./sender.ts";

/** Slack: an app's bot in a workspace's channels and DMs, over Socket Mode (listener.ts) and the Web API (client.ts). */
export const slack: ChatPlatform = {
  name: "slack",
  channelPrefix: SLACK_PREFIX,
  sender: slackSender,
  listener: async () => {
    const { SlackListener } = await import("./listener.ts");
    return (host, credential) => new SlackListener(host, credential);
  },
  // Slack's ids are upper case; the channel id keeps them lower
  personOf: (channelId) => {
    const place = slackPlace(channelId);
    return place && "dmUser" in place ? `slack:${place.dmUser.toUpperCase()}` : undefined;
  },
  operatorDm: slackOperatorDm,
};
