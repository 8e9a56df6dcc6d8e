import { join } from "node:path";
import { type Static, Type } from "@sinclair/typebox";
import { readCredential } from "../../../boundary/gateway/vault.ts";
import { appendJsonLine } from "../../../ground/files/append-line.ts";
import { oneLine, renderParts } from "./chat-text.ts";
import { discordBot, discordParts, openDiscordDm, postDiscordParts } from "./discord.ts";
import type { ExecutionContext, Executor } from "./executor.ts";
import { postSlackParts, slackBot, slackParts, slackProblem } from "./slack.ts";

/**
 * message-user: a note from the worker to its operator. When the vault
 * credential "discord" carries `owner_id` (beside its `token`), it goes as a
 * Discord DM to that user; else when "slack" carries `owner_id` (beside its
 * `bot_token`), as a Slack DM; else to the local inbox (audit/messages.jsonl,
 * one line per message, read with `roster inbox`). A DM that fails lands in
 * the inbox instead, with the reason in the result: a note to the operator is
 * never lost to an outage.
 */
const Payload = Type.Object(
  { text: Type.String({ minLength: 1, maxLength: 20_000 }) },
  { additionalProperties: false },
);
type Payload = Static<typeof Payload>;

export function inboxFile(auditDir: string): string {
  return join(auditDir, "messages.jsonl");
}

function toInbox(payload: Payload, context: ExecutionContext): void {
  appendJsonLine(inboxFile(context.paths.audit), {
    ts: new Date().toISOString(),
    worker: context.worker,
    key: context.key,
    text: payload.text,
  });
}

const ownerOf = (vault: string, name: string): string | undefined => {
  const owner = readCredential(vault, name)?.owner_id;
  return typeof owner === "string" && owner ? owner : undefined;
};

async function discordDm(owner: string, payload: Payload, context: ExecutionContext) {
  const parts = discordParts(payload.text);
  if (parts.length === 0) throw new Error("nothing to post: the text is only whitespace");
  const { rest } = discordBot(context.paths.vault);
  const channel = await openDiscordDm(rest, owner);
  const ids = await postDiscordParts(rest, channel, parts, context.key);
  return { delivered: "discord-dm", channel_id: channel, message_id: ids[0] };
}

async function slackDm(owner: string, payload: Payload, context: ExecutionContext) {
  const parts = slackParts(payload.text);
  if (parts.length === 0) throw new Error("nothing to post: the text is only whitespace");
  const { client } = slackBot(context.paths.vault);
  let channel: string | undefined;
  try {
    channel = (await client.conversations.open({ users: owner })).channel?.id;
  } catch (error) {
    throw new Error(slackProblem("conversations.open", `user ${owner}`, error), { cause: error });
  }
  if (!channel) throw new Error(`Slack conversations.open for user ${owner} named no channel`);
  const stamps = await postSlackParts(client, channel, parts);
  return { delivered: "slack-dm", channel_id: channel, message_ts: stamps[0] };
}

export const messageUser: Executor<Payload> = {
  schema: Payload,
  summary: (payload) => `message to you: ${oneLine(payload.text, 80)}`,
  // given the vault, the desk shows where it would land and the parts a DM would post
  render: (payload, context?: Omit<ExecutionContext, "key">) => {
    if (!context) return payload.text;
    const discordOwner = ownerOf(context.paths.vault, "discord");
    if (discordOwner)
      return renderParts(`To: Discord DM with user ${discordOwner}`, discordParts(payload.text));
    const slackOwner = ownerOf(context.paths.vault, "slack");
    if (slackOwner)
      return renderParts(`To: Slack DM with user ${slackOwner}`, slackParts(payload.text));
    return renderParts("To: the inbox (roster inbox)", [payload.text]);
  },
  async run(payload, context) {
    const discordOwner = ownerOf(context.paths.vault, "discord");
    const slackOwner = discordOwner ? undefined : ownerOf(context.paths.vault, "slack");
    if (discordOwner || slackOwner) {
      try {
        if (discordOwner) return await discordDm(discordOwner, payload, context);
        if (slackOwner) return await slackDm(slackOwner, payload, context);
      } catch (error) {
        toInbox(payload, context);
        return {
          delivered: "inbox",
          dm_failed: error instanceof Error ? error.message : String(error),
        };
      }
    }
    toInbox(payload, context);
    return { delivered: "inbox" };
  },
};
