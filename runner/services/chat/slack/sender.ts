import { type Static, Type } from "@sinclair/typebox";
import { splitText, VISIBLE } from "../../../ground/text/message-parts.ts";
import type { OperatorDm } from "../platform.ts";
import { chatSender } from "../sender.ts";
import { slackTarget } from "./ids.ts";

/**
 * slack: a message to a Slack channel (or a reply in a thread), posted by the
 * bot through client.ts (loaded only when something is posted). A long text
 * goes as several messages in order, split on line breaks.
 */
/** Slack advises at most 4,000 characters a message (it truncates past 40,000). */
export const SLACK_MESSAGE_LIMIT = 4000;

const Payload = Type.Object(
  {
    /**
     * A conversation id (C…, G…, D…, or a user id U… for the app's DM; never a
     * #name), or a roster channel id as a session's messages name it:
     * slack-<team>-<channel>, or slack-<team>-dm-<user> for a DM.
     */
    channel_id: Type.String({
      pattern: "^([A-Z][A-Z0-9]{2,31}|slack-[a-z0-9]{2,32}-(dm-)?[a-z0-9]{2,32})$",
    }),
    text: Type.String({ minLength: 1, maxLength: 10 * SLACK_MESSAGE_LIMIT, pattern: VISIBLE }),
    thread_ts: Type.Optional(Type.String({ pattern: "^[0-9]{1,12}\\.[0-9]{1,8}$" })),
  },
  { additionalProperties: false },
);
type Payload = Static<typeof Payload>;

export const slackParts = (text: string) => splitText(text, SLACK_MESSAGE_LIMIT);

export const slackSender = chatSender<Payload>({
  schema: Payload,
  label: "Slack",
  platform: "slack",
  parts: slackParts,
  where: (payload) =>
    `${payload.channel_id}${payload.thread_ts ? ` (thread ${payload.thread_ts})` : ""}`,
  destination: (payload) =>
    `channel ${payload.channel_id}${payload.thread_ts ? `, in thread ${payload.thread_ts}` : ""}`,
  async post(payload, parts, via) {
    const { postSlackParts, slackBot } = await import("./client.ts");
    const { client } = slackBot(via.vault, via.bot);
    // a roster id names Slack's own ids in lower case: a DM is addressed by its user
    const roster = slackTarget(payload.channel_id);
    const target = roster ?? payload.channel_id;
    const ids = await postSlackParts(client, target, parts, payload.thread_ts, via.ledger);
    return { ids, roster: roster !== undefined };
  },
  idField: "message_ts",
});

/** message-user's DM to the operator named by the "slack" credential's owner_id. */
export const slackOperatorDm: OperatorDm = {
  label: "Slack",
  parts: slackParts,
  async send(owner, parts, context) {
    const { postSlackParts, slackBot, slackProblem } = await import("./client.ts");
    const { client } = slackBot(context.paths.vault);
    let channel: string | undefined;
    try {
      channel = (await client.conversations.open({ users: owner })).channel?.id;
    } catch (error) {
      throw new Error(slackProblem("conversations.open", `user ${owner}`, error), {
        cause: error,
      });
    }
    if (!channel) throw new Error(`Slack conversations.open for user ${owner} named no channel`);
    const stamps = await postSlackParts(client, channel, parts);
    return { delivered: "slack-dm", channel_id: channel, message_ts: stamps[0] };
  },
};
