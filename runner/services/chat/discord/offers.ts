import type { REST } from "@discordjs/rest";
import {
  type APIInteraction,
  ButtonStyle,
  ComponentType,
  InteractionResponseType,
  InteractionType,
  MessageFlags,
  Routes,
} from "discord-api-types/v10";
import { errorMessage } from "../../../ground/errors.ts";
import { type GateOffer, type ListenerHost, parsePressId, pressId } from "../../listeners/child.ts";
import { discordChannelId, discordPlace } from "./ids.ts";

/**
 * Approvals from chat on Discord: an offer is a message with Approve / Deny
 * buttons; a press arrives as INTERACTION_CREATE and is acknowledged at once
 * (Discord allows 3 s; deciding can take longer, since an approval runs the
 * executor), then answered privately to the presser, or by replacing the
 * offer with its outcome for everyone once the gate is decided.
 */
const CONTENT_MAX = 2000;

/** Where a roster channel id posts on Discord (a DM needs its channel opened first). */
export async function discordTarget(rest: REST, channel: string): Promise<string | undefined> {
  const place = discordPlace(channel);
  const dm = place && "dmUser" in place ? place.dmUser : undefined;
  if (dm) {
    const opened = (await rest.post(Routes.userChannels(), { body: { recipient_id: dm } })) as {
      id: string;
    };
    return opened.id;
  }
  return /^discord-[0-9]+-([0-9]+)$/.exec(channel)?.[1];
}

function clip(text: string, room: number): string {
  return text.length <= room ? text : `${text.slice(0, room - 1)}…`;
}

export async function postDiscordOffer(rest: REST, offer: GateOffer): Promise<void> {
  const target = await discordTarget(rest, offer.channel);
  if (!target) throw new Error(`${offer.channel} is not a Discord channel id`);
  const footer = `\n\nOffer stands until ${offer.expiresAt}; after that, roster approvals.`;
  await rest.post(Routes.channelMessages(target), {
    body: {
      content: `${clip(offer.text, CONTENT_MAX - footer.length)}${footer}`,
      allowed_mentions: { parse: [] },
      components: [
        {
          type: ComponentType.ActionRow,
          components: [
            {
              type: ComponentType.Button,
              style: ButtonStyle.Success,
              label: "Approve",
              custom_id: pressId(offer.gateId, "approve"),
            },
            {
              type: ComponentType.Button,
              style: ButtonStyle.Danger,
              label: "Deny",
              custom_id: pressId(offer.gateId, "deny"),
            },
          ],
        },
      ],
    },
  });
}

/** Handles one INTERACTION_CREATE: ours are button presses on offers; others are ignored. */
export async function handleDiscordPress(
  rest: REST,
  host: ListenerHost,
  interaction: APIInteraction,
): Promise<void> {
  if (interaction.type !== InteractionType.MessageComponent) return;
  const press = parsePressId(interaction.data.custom_id);
  if (!press) return;
  const user = interaction.member?.user ?? interaction.user;
  if (!user || !interaction.channel?.id) return;
  const channel = discordChannelId(
    interaction.guild_id
      ? { guild: interaction.guild_id, channel: interaction.channel.id }
      : { dmUser: user.id },
  );
  // the interaction token authenticates these calls; the bot's must not be sent
  await rest.post(Routes.interactionCallback(interaction.id, interaction.token), {
    body: { type: InteractionResponseType.DeferredMessageUpdate },
    auth: false,
  });
  let answer: Awaited<ReturnType<ListenerHost["decide"]>>;
  try {
    answer = await host.decide({
      gate_id: press.gateId,
      verdict: press.verdict,
      user: `discord:${user.id}`,
      channel,
    });
  } catch (error) {
    answer = { text: `Not done: ${errorMessage(error)}.`, private: true, settled: false };
  }
  if (answer.settled) {
    const original = interaction.message?.content ?? "";
    await rest.patch(Routes.webhookMessage(interaction.application_id, interaction.token), {
      body: {
        content: clip(`${original}\n\n${answer.text}`, CONTENT_MAX),
        components: [],
        allowed_mentions: { parse: [] },
      },
      auth: false,
    });
  } else {
    await rest.post(Routes.webhook(interaction.application_id, interaction.token), {
      body: {
        content: clip(answer.text, CONTENT_MAX),
        flags: answer.private ? MessageFlags.Ephemeral : 0,
        allowed_mentions: { parse: [] },
      },
      auth: false,
    });
  }
}
