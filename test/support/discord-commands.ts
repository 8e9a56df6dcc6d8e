/**
 * Slash commands run by a user, for the Discord stand-in
 * (discord-stand-in.ts): a TEST DOUBLE for Discord, which can't be reached
 * from here, speaking its real wire protocol. `command()` plays a user
 * running a registered CHAT_INPUT command — INTERACTION_CREATE type 2
 * (APPLICATION_COMMAND) — and `autocomplete()` one typing into an option
 * registered with `autocomplete: true` — type 4
 * (APPLICATION_COMMAND_AUTOCOMPLETE). Both are answered on the callback and
 * webhook routes of discord-interactions.ts: a command takes 4 or 5 (then
 * @original edits and followups), an autocomplete only 8 with `data.choices`
 * (at most 25, names 1–100, values of the option's type, strings ≤100).
 * As Discord's client only offers what is registered, running a command
 * that isn't (for the guild or globally), an option it doesn't have, a value
 * of the wrong type or outside its choices and bounds, or leaving out a
 * required option throws in the test instead of reaching the bot.
 * Choices where Discord isn't observable from here:
 * - a member's `permissions` default to "0" and `app_permissions` are "0",
 *   as for button presses; `default_member_permissions` hides a command from
 *   a member lacking them unless they are an administrator;
 * - `data.resolved` carries users (and, in a guild, members) for user and
 *   mentionable options, roles for role options and text channels for
 *   channel options, named after their ids; a mentionable resolves as a user;
 *   attachment options aren't spoken;
 * - an autocomplete's focused value is sent as typed (a string), other
 *   options unchecked for presence, as the user hasn't finished.
 */
import {
  type APIApplicationCommandAutocompleteInteraction,
  type APIApplicationCommandInteractionDataOption,
  type APIChatInputApplicationCommandInteraction,
  ApplicationCommandType,
  ApplicationIntegrationType,
  ChannelType,
  InteractionContextType,
  InteractionResponseType,
  InteractionType,
  Locale,
  PermissionFlagsBits,
} from "discord-api-types/v10";
import {
  check,
  focus,
  focusedOf,
  fromSimple,
  resolvedOf,
  type SimpleOptions,
  specOf,
  wireOf,
} from "./discord-command-options.ts";
import { DiscordCommandRegistry } from "./discord-command-registry.ts";
import { autocompleteChoicesError } from "./discord-command-validation.ts";
import type { DiscordInteractions } from "./discord-interactions.ts";
import {
  apiUser,
  interactionToken,
  member,
  type PostedAuthor,
  type Snowflakes,
} from "./discord-objects.ts";

export type { SimpleOptions } from "./discord-command-options.ts";

/** A user running a slash command, as a test plays it with `command()`. */
export interface CommandRun {
  name: string;
  /** Discord's wire form, or the simpler nested one converted against the registered options. */
  options?: APIApplicationCommandInteractionDataOption[] | SimpleOptions;
  user: PostedAuthor;
  channel_id: string;
  /** Absent for a DM with the bot, where only global commands are offered. */
  guild_id?: string;
  roles?: string[];
  /** The member's computed permissions in the channel. */
  permissions?: bigint | string;
}

/** A user typing into an autocomplete option, as a test plays it with `autocomplete()`. */
export interface AutocompleteRun extends CommandRun {
  /** The option being typed into (in the chosen subcommand); else the wire options carry `focused: true`. */
  focused?: string;
}

export class DiscordCommands {
  /** The commands registered, globally and for each guild, and their routes. */
  readonly registry: DiscordCommandRegistry;

  constructor(
    private readonly applicationId: string,
    private readonly ids: Snowflakes,
    private readonly interactions: DiscordInteractions,
  ) {
    this.registry = new DiscordCommandRegistry(applicationId, ids);
  }

  /** A user runs a registered slash command: INTERACTION_CREATE type 2 goes to every session. */
  command(input: CommandRun): { id: string; token: string } {
    return this.run(input, false);
  }

  /** A user types into an autocomplete option: INTERACTION_CREATE type 4 goes to every session. */
  autocomplete(input: AutocompleteRun): { id: string; token: string } {
    return this.run(input, true);
  }

  private run(input: AutocompleteRun, partial: boolean): { id: string; token: string } {
    const where = `/${input.name}`;
    const guildId = input.guild_id;
    const registered = this.registry.find(input.name, guildId);
    if (!registered) {
      throw new Error(
        `${where} isn't registered ${guildId ? `for guild ${guildId} or globally` : "globally for DMs"}`,
      );
    }
    const permissions = BigInt(input.permissions ?? 0);
    const needed = registered.command.default_member_permissions;
    const admin = (permissions & PermissionFlagsBits.Administrator) !== 0n;
    if (guildId && needed !== null && !admin && (BigInt(needed) & permissions) !== BigInt(needed)) {
      throw new Error(
        `${where} needs permissions ${needed}, which the member lacks, so Discord doesn't offer it`,
      );
    }
    const given = input.options;
    let options = Array.isArray(given)
      ? wireOf(given)
      : fromSimple(given ?? {}, registered.options, where);
    if (partial && input.focused) options = focus(options, input.focused);
    check(options, registered.options, where, partial);
    const focused = focusedOf(options);
    const focusedSpec = focused && specOf(registered.options, options, focused);
    if (partial && !focusedSpec)
      throw new Error(`${where}: an autocomplete needs one focused option`);
    if (!partial && focused) throw new Error(`${where}: only an autocomplete has a focused option`);

    const id = this.ids.next();
    const token = interactionToken(id);
    const user = apiUser(input.user);
    const owners = { [ApplicationIntegrationType.GuildInstall]: guildId ?? "0" };
    const resolved = partial ? undefined : resolvedOf(options, registered.options, guildId);
    const base = {
      id: registered.command.id,
      name: registered.command.name,
      type: ApplicationCommandType.ChatInput as const,
      ...(registered.command.guild_id ? { guild_id: registered.command.guild_id } : {}),
    };
    // The options were checked against the registered option types above, so Discord's union holds them.
    const sent =
      options as APIApplicationCommandInteractionDataOption<InteractionType.ApplicationCommandAutocomplete>[];
    const common = {
      id,
      application_id: this.applicationId,
      token,
      version: 1 as const,
      channel_id: input.channel_id,
      locale: Locale.EnglishUS,
      app_permissions: "0",
      entitlements: [],
      authorizing_integration_owners: owners,
      attachment_size_limit: 10 * 1024 * 1024,
    };
    const place = guildId
      ? {
          guild_id: guildId,
          guild: { id: guildId, features: [], locale: Locale.EnglishUS },
          guild_locale: Locale.EnglishUS,
          channel: {
            id: input.channel_id,
            type: ChannelType.GuildText as const,
            guild_id: guildId,
          },
          member: { ...member(), roles: input.roles ?? [], user, permissions: String(permissions) },
          context: InteractionContextType.Guild,
        }
      : {
          channel: { id: input.channel_id, type: ChannelType.DM as const },
          user,
          context: InteractionContextType.BotDM,
        };
    const payload:
      | APIChatInputApplicationCommandInteraction
      | APIApplicationCommandAutocompleteInteraction = partial
      ? {
          ...common,
          ...place,
          type: InteractionType.ApplicationCommandAutocomplete,
          data: { ...base, options: sent },
        }
      : {
          ...common,
          ...place,
          type: InteractionType.ApplicationCommand,
          data: {
            ...base,
            ...(options.length > 0
              ? { options: options as APIApplicationCommandInteractionDataOption[] }
              : {}),
            ...(resolved ? { resolved } : {}),
          },
        };
    return this.interactions.start({
      payload,
      channelId: input.channel_id,
      messageId: undefined,
      metadata: {
        id,
        type: InteractionType.ApplicationCommand,
        user,
        authorizing_integration_owners: owners,
      },
      accepts: partial
        ? [InteractionResponseType.ApplicationCommandAutocompleteResult]
        : [
            InteractionResponseType.ChannelMessageWithSource,
            InteractionResponseType.DeferredChannelMessageWithSource,
          ],
      ...(focusedSpec
        ? {
            checkChoices: (body: Record<string, unknown>) =>
              autocompleteChoicesError(body, focusedSpec.type),
          }
        : {}),
    });
  }
}
