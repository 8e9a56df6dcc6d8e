/**
 * Interactions for the Discord stand-in (discord-stand-in.ts): a TEST DOUBLE
 * for Discord, which can't be reached from here, speaking its real wire
 * protocol: what Discord does when a user presses a button on a bot's message
 * — an INTERACTION_CREATE (type 3, MESSAGE_COMPONENT) on the gateway — or
 * runs a slash command (type 2 and 4, built in discord-commands.ts), and the
 * HTTP routes a bot answers one on. Those take no bot token, as on Discord:
 * the interaction's token in the path is the credential.
 * - POST /interactions/:id/:token/callback, the one initial response, within
 *   3 s of the interaction: 4 (a message; data.flags 64 makes it ephemeral),
 *   5 (a deferred message, shown loading until @original is edited), 6
 *   (deferred update) or 7 (update the pressed message) for a press; 4 or 5
 *   for a command; only 8 (autocomplete choices) for an autocomplete. A
 *   second one is refused 400 40060, an unknown or late one 404 10062. A type
 *   Discord defines but the interaction doesn't take is refused 400 50035 on
 *   `type` (Discord's exact error code for that isn't observable from here:
 *   the double says INTERACTION_RESPONSE_TYPE_INVALID).
 * - PATCH /webhooks/:application_id/:token/messages/@original and POST
 *   /webhooks/:application_id/:token (followups; flags 64 too), once the
 *   interaction is acknowledged and for 15 minutes after the press.
 * Messages an answer creates or edits go through the stand-in's history, so
 * sessions see MESSAGE_CREATE and MESSAGE_UPDATE for them; ephemeral ones
 * never reach the channel and are kept here.
 */
import type { ServerResponse } from "node:http";
import {
  type APIInteraction,
  type APIMessage,
  type APIMessageInteractionMetadata,
  type APIUser,
  GatewayDispatchEvents,
  InteractionResponseType,
  InteractionType,
  MessageFlags,
  MessageType,
} from "discord-api-types/v10";
import type { DiscordChannels } from "./discord-channels.ts";
import { messageBody, messageComponents } from "./discord-components.ts";
import type { DiscordGateway } from "./discord-gateway-stand-in.ts";
import {
  contentError,
  type FieldError,
  invalidFormBody,
  isRecord,
  limitHeaders,
  reply,
} from "./discord-http.ts";
import { apiMessage, discordTimestamp, type Snowflakes } from "./discord-objects.ts";
import { buttonPress, type Press } from "./discord-press.ts";

export type { Press } from "./discord-press.ts";

/** One answer to an interaction: a callback (its type), an edit of @original, or a followup. */
export interface InteractionResponse {
  interaction_id: string;
  type: InteractionResponseType | "edit_original" | "followup";
  data: Record<string, unknown> | undefined;
}

/** What the interactions share with the rest of the stand-in. */
export interface InteractionHost {
  applicationId: string;
  botUser: APIUser;
  ids: Snowflakes;
  /** How long Discord waits for the initial response (3 s). */
  responseWindowMs: number;
  /** The messages a press finds and an answer adds to or edits. */
  channels: DiscordChannels;
  gateway: DiscordGateway;
}

/** What @original names: a message in the channel, or an ephemeral one only the presser saw. */
type Original = { id: string } | { ephemeral: APIMessage };

/** An interaction as its kind starts it; the callback and webhook routes keep the rest. */
export interface Started {
  /** The INTERACTION_CREATE payload, dispatched as is. */
  payload: APIInteraction;
  channelId: string;
  /** The message a button press was on; undefined for a command. */
  messageId: string | undefined;
  /** What a message answering the interaction carries as its interaction_metadata. */
  metadata: APIMessageInteractionMetadata;
  /** The initial callback types this kind of interaction takes. */
  accepts: readonly InteractionResponseType[];
  /** Refuses a type 8 callback's data as Discord would, or accepts it (undefined). */
  checkChoices?: (data: Record<string, unknown>) => FieldError | undefined;
}

interface Interaction extends Started {
  id: string;
  token: string;
  at: number;
  acknowledged: InteractionResponseType | undefined;
  original: Original | undefined;
}

/** How long an interaction's token serves the webhook routes after the press. */
const TOKEN_LIFETIME_MS = 15 * 60_000;
/** The callback types the double speaks (modals and premium prompts aren't); Discord's own list is longer. */
const CALLBACK_TYPES = [
  InteractionResponseType.ChannelMessageWithSource,
  InteractionResponseType.DeferredChannelMessageWithSource,
  InteractionResponseType.DeferredMessageUpdate,
  InteractionResponseType.UpdateMessage,
  InteractionResponseType.ApplicationCommandAutocompleteResult,
] as const;

/** Moves a field error under a body key ("data" for a callback's message). */
function under(prefix: string, error: FieldError): FieldError {
  return prefix ? { ...error, field: `${prefix}.${error.field}` } : error;
}

export class DiscordInteractions {
  /** Every accepted answer, in order. */
  readonly responses: InteractionResponse[] = [];
  private readonly open = new Map<string, Interaction>();

  constructor(private readonly host: InteractionHost) {}

  /** A user presses a button on a stored message: INTERACTION_CREATE goes to every session. */
  press(input: Press): { id: string; token: string } {
    return this.start(buttonPress(input, this.host));
  }

  /** Opens an interaction for its window and dispatches its INTERACTION_CREATE to every session. */
  start(started: Started): { id: string; token: string } {
    const { id, token } = started.payload;
    this.open.set(id, {
      ...started,
      id,
      token,
      at: Date.now(),
      acknowledged: undefined,
      original: undefined,
    });
    // Interactions aren't behind an intent: every session gets them.
    this.host.gateway.dispatch(GatewayDispatchEvents.InteractionCreate, () => started.payload);
    return { id, token };
  }

  /** Answers an interaction route (true), or leaves any other path to the caller (false). */
  route(method: string, path: string, body: Record<string, unknown>, res: ServerResponse): boolean {
    const callback = /^\/api\/v10\/interactions\/([0-9]+)\/([^/]+)\/callback$/.exec(path);
    // discord-api-types' Routes percent-encode the "@"; Discord takes either spelling.
    const hook = /^\/api\/v10\/webhooks\/([0-9]+)\/([^/]+)(\/messages\/(?:@|%40)original)?$/.exec(
      path,
    );
    if (callback?.[1] && callback[2]) {
      if (method === "POST") this.callback(res, callback[1], callback[2], body);
      else reply(res, 405, { message: "405: Method Not Allowed", code: 0 });
    } else if (hook?.[1] && hook[2]) {
      const interaction = this.byToken(res, hook[1], hook[2]);
      const route = `${method} ${hook[3] ? "@original" : "webhook"}`;
      if (!interaction) return true;
      if (route === "PATCH @original") this.editOriginal(res, interaction, body);
      else if (route === "POST webhook") this.followup(res, interaction, body);
      else reply(res, 405, { message: "405: Method Not Allowed", code: 0 });
    } else {
      return false;
    }
    return true;
  }

  reset(): void {
    this.responses.length = 0;
    this.open.clear();
  }

  private callback(
    res: ServerResponse,
    id: string,
    token: string,
    body: Record<string, unknown>,
  ): void {
    const interaction = this.open.get(id);
    // Discord forgets an interaction nobody answered within its window.
    const late = interaction && Date.now() - interaction.at > this.host.responseWindowMs;
    if (
      !interaction ||
      interaction.token !== token ||
      (late && interaction.acknowledged === undefined)
    ) {
      reply(res, 404, { message: "Unknown interaction", code: 10062 });
      return;
    }
    if (interaction.acknowledged !== undefined) {
      reply(res, 400, { message: "Interaction has already been acknowledged.", code: 40060 });
      return;
    }
    const type = CALLBACK_TYPES.find((known) => known === body.type);
    const data = isRecord(body.data) ? body.data : undefined;
    if (type === undefined) {
      invalidFormBody(res, {
        field: "type",
        code: "BASE_TYPE_CHOICES",
        message: `Value must be one of {${CALLBACK_TYPES.join(", ")}}.`,
      });
      return;
    }
    if (!interaction.accepts.includes(type)) {
      invalidFormBody(res, {
        field: "type",
        code: "INTERACTION_RESPONSE_TYPE_INVALID",
        message: "Interaction response type is invalid for this interaction.",
      });
      return;
    }
    const refused =
      type === InteractionResponseType.ApplicationCommandAutocompleteResult
        ? interaction.checkChoices?.(data ?? {})
        : undefined;
    if (refused) {
      invalidFormBody(res, under("data", refused));
      return;
    }
    const pressed = { id: interaction.messageId ?? "" };
    let original: Original | undefined = interaction.messageId ? pressed : undefined;
    if (
      type === InteractionResponseType.ChannelMessageWithSource ||
      type === InteractionResponseType.DeferredChannelMessageWithSource
    ) {
      const deferred = type === InteractionResponseType.DeferredChannelMessageWithSource;
      const made = this.compose(interaction, data ?? {}, "data", deferred);
      if ("field" in made) {
        invalidFormBody(res, made);
        return;
      }
      original = made;
    } else if (type === InteractionResponseType.UpdateMessage) {
      const edited = this.edit(pressed, data ?? {}, "data");
      if (edited && "field" in edited) {
        invalidFormBody(res, edited);
        return;
      }
    }
    interaction.acknowledged = type;
    interaction.original = original;
    this.responses.push({ interaction_id: id, type, data });
    res.writeHead(204, limitHeaders(4));
    res.end();
  }

  /** The interaction a webhook route's token names, or undefined once the refusal is sent. */
  private byToken(
    res: ServerResponse,
    applicationId: string,
    token: string,
  ): Interaction | undefined {
    const interaction = [...this.open.values()].find((open) => open.token === token);
    if (!interaction || applicationId !== this.host.applicationId) {
      reply(res, 404, { message: "Unknown Webhook", code: 10015 });
      return undefined;
    }
    if (Date.now() - interaction.at > TOKEN_LIFETIME_MS) {
      reply(res, 401, { message: "Invalid Webhook Token", code: 50027 });
      return undefined;
    }
    return interaction;
  }

  private editOriginal(
    res: ServerResponse,
    interaction: Interaction,
    body: Record<string, unknown>,
  ): void {
    // Until the callback, there is no response to edit: the webhook message doesn't exist yet.
    if (!interaction.original) {
      reply(res, 404, { message: "Unknown Webhook", code: 10015 });
      return;
    }
    const edited = this.edit(interaction.original, body, "");
    if (!edited) {
      reply(res, 404, { message: "Unknown Message", code: 10008 });
      return;
    }
    if ("field" in edited) {
      invalidFormBody(res, edited);
      return;
    }
    if ("ephemeral" in interaction.original) interaction.original = { ephemeral: edited };
    this.responses.push({ interaction_id: interaction.id, type: "edit_original", data: body });
    reply(res, 200, edited, limitHeaders(4));
  }

  private followup(
    res: ServerResponse,
    interaction: Interaction,
    body: Record<string, unknown>,
  ): void {
    // An autocomplete's choices are its only answer: there is no message to follow up.
    const autocompleted = InteractionResponseType.ApplicationCommandAutocompleteResult;
    if (interaction.acknowledged === undefined || interaction.acknowledged === autocompleted) {
      reply(res, 404, { message: "Unknown Webhook", code: 10015 });
      return;
    }
    const made = this.compose(interaction, body, "", false);
    if ("field" in made) {
      invalidFormBody(res, made);
      return;
    }
    const message = "ephemeral" in made ? made.ephemeral : this.host.channels.find(made.id);
    this.responses.push({ interaction_id: interaction.id, type: "followup", data: body });
    reply(res, 200, message, limitHeaders(4));
  }

  /**
   * A message answering the interaction, from the bot by way of the app's
   * webhook as on Discord: stored in the channel unless ephemeral. A deferred
   * one is the loading placeholder, its content to come with an edit.
   */
  private compose(
    interaction: Interaction,
    data: Record<string, unknown>,
    prefix: string,
    deferred: boolean,
  ): Original | FieldError {
    const parts = deferred ? { content: "", components: [] } : messageBody(data);
    if ("field" in parts) return under(prefix, parts);
    const { content, components } = parts;
    const ephemeral = ((Number(data.flags) || 0) & MessageFlags.Ephemeral) !== 0;
    const flags = (ephemeral ? MessageFlags.Ephemeral : 0) | (deferred ? MessageFlags.Loading : 0);
    const message: APIMessage = {
      ...apiMessage({
        id: this.host.ids.next(),
        channelId: interaction.channelId,
        author: this.host.botUser,
        content,
        mentions: [],
        attachments: [],
        components,
      }),
      // A command's answer is a CHAT_INPUT_COMMAND message on Discord.
      ...(interaction.metadata.type === InteractionType.ApplicationCommand
        ? { type: MessageType.ChatInputCommand }
        : {}),
      // Discord's flag enum has no member for a combination, so the sum is cast back to it.
      flags: flags as MessageFlags,
      webhook_id: this.host.applicationId,
      application_id: this.host.applicationId,
      interaction_metadata: interaction.metadata,
    };
    if (ephemeral) return { ephemeral: message };
    this.host.channels.add(message);
    return { id: message.id };
  }

  /**
   * Edits what `target` names with a body's content and components (either
   * left as it was when absent): the edited message, the field refused, or
   * undefined when the message is gone. An edit ends a deferred response's
   * loading state.
   */
  private edit(
    target: Original,
    data: Record<string, unknown>,
    prefix: string,
  ): APIMessage | FieldError | undefined {
    const current = "ephemeral" in target ? target.ephemeral : this.host.channels.find(target.id);
    if (!current) return undefined;
    const content = typeof data.content === "string" ? data.content : current.content;
    const components =
      data.components === undefined
        ? (current.components ?? [])
        : messageComponents(data.components);
    if (!Array.isArray(components)) return under(prefix, components);
    const refused = contentError(content, true);
    if (refused) return under(prefix, refused);
    const edited: APIMessage = {
      ...current,
      content,
      components,
      edited_timestamp: discordTimestamp(),
      flags: ((current.flags ?? 0) & ~MessageFlags.Loading) as MessageFlags,
    };
    if (!("ephemeral" in target)) this.host.channels.replace(edited);
    return edited;
  }
}
