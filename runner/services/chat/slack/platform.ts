import { Type } from "@sinclair/typebox";
import type { ChatPlatform } from "../platform.ts";
import { sendTool } from "../send-tool.ts";
import { SLACK_PREFIX, slackPlace } from "./ids.ts";
import { slackOperatorDm, slackSender } from "./sender.ts";
import { SLACK_RULES, slackVouch } from "./vouch.ts";

/** Slack: an app's bot in a workspace's channels and DMs, over Socket Mode (listener.ts) and the Web API (client.ts). */
export const slack: ChatPlatform = {
  name: "slack",
  channelPrefix: SLACK_PREFIX,
  bot: true,
  people: true,
  // a channel and a DM alike are in their workspace
  serverOf: (channelId) => {
    const place = slackPlace(channelId);
    return place ? `slack-${place.team}` : undefined;
  },
  fromPlatform: SLACK_RULES,
  send: sendTool({
    label: "Send to Slack",
    description: "Post a message to a Slack channel, or reply in a thread.",
    text: "the message",
    extra: {
      thread_ts: Type.Optional(
        Type.String({ minLength: 1, description: "the thread's ts, to reply inside it" }),
      ),
    },
    rationale: true,
  }),
  connection: {
    summary:
      "Slack's Web API with a bot token (xoxb-…); the same credential the slack executor uses",
    hosts: ["slack.com"],
    inject: { header: "authorization", value: "Bearer {bot_token}" },
    // the field the slack executor and listener read (client.ts)
    secretField: "bot_token",
    verify: { method: "POST", path: "/api/auth.test", okField: "ok" },
    // Socket Mode connects with the app-level token (xapp-…), a second secret
    listenerNeeds: ["app_token"],
  },
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
  vouch: slackVouch,
};
