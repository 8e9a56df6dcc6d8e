/**
 * A button press for the Discord stand-in (discord-stand-in.ts): a TEST
 * DOUBLE for Discord, which can't be reached from here, speaking its real
 * wire protocol — a user pressing a button on a stored message starts an
 * INTERACTION_CREATE (type 3, MESSAGE_COMPONENT) that takes the callback
 * types 4, 5, 6 and 7 (discord-interactions.ts answers them).
 */
import { InteractionResponseType, InteractionType } from "discord-api-types/v10";
import { buttonOf } from "./discord-components.ts";
import type { InteractionHost, Started } from "./discord-interactions.ts";
import {
  apiUser,
  buttonInteraction,
  interactionToken,
  type PostedAuthor,
} from "./discord-objects.ts";

/** A user pressing a button, as a test plays it with `press()`. */
export interface Press {
  message_id: string;
  custom_id: string;
  user: PostedAuthor;
  /** The message's guild; defaults to the one a post() gave its channel, else the press is in a DM. */
  guild_id?: string;
}

/** The callback types a button press takes. */
const COMPONENT_CALLBACKS: readonly InteractionResponseType[] = [
  InteractionResponseType.ChannelMessageWithSource,
  InteractionResponseType.DeferredChannelMessageWithSource,
  InteractionResponseType.DeferredMessageUpdate,
  InteractionResponseType.UpdateMessage,
];

/** The interaction a press starts; throws when Discord wouldn't let the user press it. */
export function buttonPress(input: Press, host: InteractionHost): Started {
  const { channels } = host;
  const message = channels.find(input.message_id);
  if (!message) throw new Error(`no message ${input.message_id} to press a button on`);
  const button = buttonOf(message, input.custom_id);
  if (!button) throw new Error(`message ${message.id} has no button ${input.custom_id}`);
  // Discord greys a disabled button out, so nobody can press it.
  if (button.disabled) throw new Error(`button ${input.custom_id} is disabled`);
  const user = apiUser(input.user);
  const id = host.ids.next();
  const interaction = buttonInteraction({
    id,
    token: interactionToken(id),
    applicationId: host.applicationId,
    message,
    customId: button.custom_id,
    user,
    guildId: input.guild_id ?? channels.guildOf(message.channel_id),
  });
  return {
    payload: interaction,
    channelId: message.channel_id,
    messageId: message.id,
    metadata: {
      id,
      type: InteractionType.MessageComponent,
      user,
      authorizing_integration_owners: interaction.authorizing_integration_owners,
      interacted_message_id: message.id,
    },
    accepts: COMPONENT_CALLBACKS,
  };
}
