import type { WebClient } from "@slack/web-api";
import { request } from "undici";
import { errorMessage } from "../../../ground/errors.ts";
import type { CommandReply, ListenerHost } from "../../listeners/child.ts";
import { slackChannelId } from "./ids.ts";

/**
 * Slack slash commands over Socket Mode: a `slash_commands` envelope (the
 * app's manifest declares `/approvals`, `/task`, … or one `/roster <what>`)
 * becomes a typed line for the host's slash-command core, which judges and
 * answers it. Slack wants the ack within 3 s: an answer ready by then rides
 * on the ack; a slower one (an approval that sends an email) is acked bare
 * and posted to the command's response_url when it comes. Whether the person
 * is a workspace admin, and of which team, is asked of users.info with every
 * command, so a demotion counts at once; a command from anyone outside the
 * bot's own workspace is refused here, unjudged.
 */
export interface SlashBody {
  command?: string;
  /** The workspace the command was run in. */
  team_id?: string;
  text?: string;
  user_id?: string;
  channel_id?: string;
  response_url?: string;
}

export type SlashAck = (response?: Record<string, unknown>) => Promise<void>;

/** How long an answer may take and still ride on the ack (Slack waits 3 s for it). */
const ACK_WITHIN_MS = 2_200;
/** Slack's limit for a message's text, kept under. */
const TEXT_MAX = 39_000;

export async function handleSlackCommand(
  web: WebClient,
  host: ListenerHost,
  team: string,
  body: SlashBody,
  ack: SlashAck,
  responseOrigin: string,
): Promise<void> {
  const user = body.user_id;
  const channelId = body.channel_id;
  if (!user || !channelId || !body.command) {
    await ack();
    return;
  }
  const lower = channelId.toLowerCase();
  const channel = slackChannelId(
    lower.startsWith("d") ? { team, dmUser: user } : { team, channel: lower },
  );
  const name = body.command.replace(/^\//, "");
  const text = (body.text ?? "").trim();
  // `/roster task ls` and `/task ls` say the same
  const line = name === "roster" ? `/${text}` : `/${name} ${text}`;
  const answering = personOf(web, user).then((person) => {
    const foreign = foreignTeam(team, body.team_id, person?.team);
    if (foreign) return { text: foreign, room: false };
    return host.command({
      channel,
      user: `slack:${user}`,
      ...(person ? { platform: { server: team.toUpperCase(), workspaceAdmin: person.admin } } : {}),
      line,
    });
  });
  const timely = await Promise.race([
    answering,
    new Promise<undefined>((resolve) =>
      setTimeout(() => resolve(undefined), ACK_WITHIN_MS).unref(),
    ),
  ]);
  if (timely) {
    await ack(message(timely));
    return;
  }
  await ack();
  const late = await answering.catch(
    (error: unknown): CommandReply => ({
      text: `Not done: ${errorMessage(error)}.`,
      room: false,
    }),
  );
  // a response_url elsewhere is not Slack's: nothing is posted there
  if (!body.response_url || new URL(body.response_url).origin !== responseOrigin) {
    host.note(`a command's answer was not posted: its response_url is not Slack's`);
    return;
  }
  const response = await request(body.response_url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(message(late)),
    headersTimeout: 15_000,
    bodyTimeout: 15_000,
  });
  await response.body.dump();
}

function message(reply: CommandReply): Record<string, unknown> {
  const text =
    reply.text.length > TEXT_MAX ? `${reply.text.slice(0, TEXT_MAX)}\n… (cut here)` : reply.text;
  return { response_type: reply.room ? "in_channel" : "ephemeral", text };
}

/**
 * Why a command from another workspace is refused unjudged, or undefined when
 * it is the bot's own: the workspace it was run in and the asker's own team
 * (users.info; a Slack Connect guest's is their home team) must both be the
 * bot's. Another team's admin is no admin here.
 */
function foreignTeam(
  own: string,
  ranIn: string | undefined,
  asker: string | undefined,
): string | undefined {
  const theirs = [ranIn, asker].find((one) => one !== undefined && one.toLowerCase() !== own);
  return theirs === undefined
    ? undefined
    : `Not done: this bot takes commands only from people of its own workspace (${own.toUpperCase()}), and ${theirs} is another.`;
}

/**
 * users.info's word on the person: their team and whether they are an admin
 * or owner of it; undefined when Slack couldn't be asked (then nothing is vouched).
 */
async function personOf(
  web: WebClient,
  user: string,
): Promise<{ team: string | undefined; admin: boolean } | undefined> {
  try {
    const info = await web.users.info({ user });
    const found = info.user;
    if (!found) return undefined;
    return { team: found.team_id, admin: found.is_admin === true || found.is_owner === true };
  } catch {
    return undefined;
  }
}
