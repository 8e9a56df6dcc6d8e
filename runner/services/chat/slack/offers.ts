import type { WebClient } from "@slack/web-api";
import { request } from "undici";
import { errorMessage } from "../../../ground/errors.ts";
import { type GateOffer, type ListenerHost, parsePressId, pressId } from "../../listeners/child.ts";
import { slackChannelId, slackTarget } from "./ids.ts";

/**
 * Approvals from chat on Slack: an offer is a message with Approve / Deny
 * buttons (Block Kit); a press arrives as an `interactive` envelope
 * (block_actions), acked at once, then answered with an ephemeral message to
 * the presser, or by replacing the offer through its response_url with the
 * outcome for everyone once the gate is decided.
 */
const SECTION_MAX = 2900;

function clip(text: string, room: number): string {
  return text.length <= room ? text : `${text.slice(0, room - 1)}…`;
}

export async function postSlackOffer(web: WebClient, offer: GateOffer): Promise<void> {
  const target = slackTarget(offer.channel);
  if (!target) throw new Error(`${offer.channel} is not a Slack channel id`);
  const text = `${clip(offer.text, SECTION_MAX)}\n\nOffer stands until ${offer.expiresAt}; after that, roster approvals.`;
  await web.chat.postMessage({
    channel: target,
    text,
    blocks: [
      { type: "section", text: { type: "plain_text", text, emoji: false } },
      {
        type: "actions",
        elements: [
          {
            type: "button",
            style: "primary",
            text: { type: "plain_text", text: "Approve" },
            action_id: pressId(offer.gateId, "approve"),
            value: offer.gateId,
          },
          {
            type: "button",
            style: "danger",
            text: { type: "plain_text", text: "Deny" },
            action_id: pressId(offer.gateId, "deny"),
            value: offer.gateId,
          },
        ],
      },
    ],
  });
}

interface BlockActions {
  type?: string;
  user?: { id?: string };
  team?: { id?: string };
  channel?: { id?: string };
  message?: { text?: string };
  response_url?: string;
  actions?: { action_id?: string }[];
}

export async function handleSlackPress(
  web: WebClient,
  host: ListenerHost,
  team: string,
  body: BlockActions,
  /** Where response_urls may point (Slack's hooks host, or the configured API's origin). */
  responseOrigin: string,
): Promise<void> {
  if (body.type !== "block_actions") return;
  const press = parsePressId(body.actions?.[0]?.action_id ?? "");
  const user = body.user?.id;
  const channelId = body.channel?.id;
  if (!press || !user || !channelId) return;
  const lower = channelId.toLowerCase();
  const channel = slackChannelId(
    lower.startsWith("d") ? { team, dmUser: user } : { team, channel: lower },
  );
  let answer: Awaited<ReturnType<ListenerHost["decide"]>>;
  try {
    answer = await host.decide({
      gate_id: press.gateId,
      verdict: press.verdict,
      user: `slack:${user}`,
      channel,
    });
  } catch (error) {
    answer = { text: `Not done: ${errorMessage(error)}.`, private: true, settled: false };
  }
  // a response_url elsewhere is not Slack's: the offer is left as it is, the presser still told
  if (answer.settled && body.response_url && new URL(body.response_url).origin === responseOrigin) {
    const text = clip(`${body.message?.text ?? ""}\n\n${answer.text}`, SECTION_MAX);
    const response = await request(body.response_url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ replace_original: true, text }),
      headersTimeout: 15_000,
      bodyTimeout: 15_000,
    });
    await response.body.dump();
    return;
  }
  await web.chat.postEphemeral({ channel: channelId, user, text: answer.text });
}
