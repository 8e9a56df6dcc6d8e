/**
 * Application command registration for the Discord stand-in
 * (discord-stand-in.ts): a TEST DOUBLE for Discord, which can't be reached
 * from here, speaking its real wire protocol for the routes a bot registers
 * its slash commands on, with `Authorization: Bot <token>` (checked by the
 * stand-in before these routes):
 * - PUT /applications/:app/commands and /applications/:app/guilds/:guild/commands,
 *   a bulk overwrite replacing that scope's whole set and answering the
 *   commands as created (`id`, `application_id`, `guild_id` for a guild's,
 *   `version`, `type` defaulting to 1 CHAT_INPUT, `default_member_permissions`);
 * - GET on the same paths, the scope's set.
 * Validation is Discord's: names `^[-_\p{L}\p{N}]{1,32}$` and lower case
 * (CHAT_INPUT, and every option), descriptions 1–100, at most 25 options and
 * 25 choices, at most 100 commands, unique names, required options first,
 * subcommands only at the top or in a group and never beside plain options,
 * autocomplete only on string/integer/number options without choices — each
 * refused 400 50035 "Invalid Form Body" with the error tree under the index
 * of the command (`errors["0"].options["1"].name`).
 * Choices where Discord isn't observable from here:
 * - error codes Discord doesn't document are named after its style
 *   (APPLICATION_COMMAND_OPTIONS_TYPE_INVALID, …_DUPLICATE_NAME,
 *   …_AUTOCOMPLETE_CHOICES); duplicate command names and a set of more than
 *   100 are errors of the whole body (`errors._errors`);
 * - another application's id is refused 403 20012, as Discord refuses a
 *   token acting on an application it isn't; guilds aren't modelled, so any
 *   guild id is taken;
 * - a command overwritten with the same name and type keeps its id, and its
 *   version changes only when its definition does;
 * - POST/PATCH/DELETE of a single command aren't spoken (405);
 * - localizations are kept as given, never computed.
 */

import type { ServerResponse } from "node:http";
import {
  type APIApplicationCommand,
  type APIApplicationCommandOption,
  type ApplicationCommandOptionType,
  ApplicationCommandType,
  ApplicationIntegrationType,
  InteractionContextType,
} from "discord-api-types/v10";
import { commandsError, list } from "./discord-command-validation.ts";
import { invalidFormBody, isRecord, limitHeaders, reply } from "./discord-http.ts";
import type { Snowflakes } from "./discord-objects.ts";

/** A registered option as the double reads it back when a user runs its command. */
export interface OptionSpec {
  type: ApplicationCommandOptionType;
  name: string;
  description: string;
  required?: boolean;
  choices?: { name: string; value: string | number }[];
  autocomplete?: boolean;
  min_value?: number;
  max_value?: number;
  min_length?: number;
  max_length?: number;
  options?: OptionSpec[];
}

/** A registered command: what Discord answers for it, and its options as the double reads them. */
export interface Registered {
  command: APIApplicationCommand;
  options: OptionSpec[];
}

const GLOBAL = "global";

/** A validated option as Discord stores it: the fields it knows, nested ones likewise. */
function spec(option: Record<string, unknown>): OptionSpec {
  const known = [
    "required",
    "choices",
    "autocomplete",
    "min_value",
    "max_value",
    "min_length",
    "max_length",
  ];
  const kept = Object.fromEntries(Object.entries(option).filter(([key]) => known.includes(key)));
  const nested = list(option.options)?.filter(isRecord).map(spec);
  return {
    type: option.type as ApplicationCommandOptionType,
    name: String(option.name),
    description: String(option.description),
    ...kept,
    ...(nested ? { options: nested } : {}),
  };
}

export class DiscordCommandRegistry {
  /** Each scope's commands, by guild id or "global". */
  private readonly scopes = new Map<string, Registered[]>();

  constructor(
    private readonly applicationId: string,
    private readonly ids: Snowflakes,
  ) {}

  /** A scope's commands as Discord answers them: a guild's, or the global ones. */
  registered(guildId?: string): APIApplicationCommand[] {
    return (this.scopes.get(guildId ?? GLOBAL) ?? []).map((entry) => entry.command);
  }

  /** The command a user in this guild (or DM, undefined) can run by this name, guild commands first. */
  find(name: string, guildId: string | undefined): Registered | undefined {
    const chatInput = (entry: Registered) =>
      entry.command.name === name && entry.command.type === ApplicationCommandType.ChatInput;
    const inGuild = guildId ? this.scopes.get(guildId)?.find(chatInput) : undefined;
    if (inGuild) return inGuild;
    const global = this.scopes.get(GLOBAL)?.find(chatInput);
    const context = guildId ? InteractionContextType.Guild : InteractionContextType.BotDM;
    // A global command is offered only in the contexts it names (all of them when null).
    const contexts = global?.command.contexts;
    return contexts && !contexts.includes(context) ? undefined : global;
  }

  /** Answers a command route (true), or leaves any other path to the caller (false). */
  route(method: string, path: string, body: unknown, res: ServerResponse): boolean {
    const match = /^\/api\/v10\/applications\/([0-9]+)(?:\/guilds\/([0-9]+))?\/commands$/.exec(
      path,
    );
    if (!match) return false;
    const guildId = match[2];
    if (match[1] !== this.applicationId) {
      reply(res, 403, {
        message: "You are not authorized to perform this action on this application",
        code: 20012,
      });
    } else if (method === "GET") {
      reply(res, 200, this.registered(guildId), limitHeaders(4));
    } else if (method === "PUT") {
      const refused = commandsError(body);
      if (refused) invalidFormBody(res, refused);
      else
        reply(
          res,
          200,
          this.overwrite(guildId, (list(body) ?? []).filter(isRecord)),
          limitHeaders(4),
        );
    } else {
      reply(res, 405, { message: "405: Method Not Allowed", code: 0 });
    }
    return true;
  }

  reset(): void {
    this.scopes.clear();
  }

  /** Replaces a scope's set; a command keeping its name and type keeps its id. */
  private overwrite(
    guildId: string | undefined,
    commands: Record<string, unknown>[],
  ): APIApplicationCommand[] {
    const scope = guildId ?? GLOBAL;
    const before = this.scopes.get(scope) ?? [];
    const after = commands.map((input): Registered => {
      const type = (input.type ?? ApplicationCommandType.ChatInput) as ApplicationCommandType;
      const options = (list(input.options) ?? []).filter(isRecord).map(spec);
      const earlier = before.find(
        (entry) => entry.command.name === input.name && entry.command.type === type,
      );
      const definition = {
        type,
        application_id: this.applicationId,
        ...(guildId ? { guild_id: guildId } : {}),
        name: String(input.name),
        ...(input.name_localizations
          ? { name_localizations: input.name_localizations as Record<string, string> }
          : {}),
        description: typeof input.description === "string" ? input.description : "",
        ...(input.description_localizations
          ? { description_localizations: input.description_localizations as Record<string, string> }
          : {}),
        // The options were validated against the option types, so Discord's union holds them.
        ...(options.length > 0 ? { options: options as APIApplicationCommandOption[] } : {}),
        default_member_permissions:
          typeof input.default_member_permissions === "string"
            ? input.default_member_permissions
            : null,
        nsfw: input.nsfw === true,
        integration_types: (list(input.integration_types) as
          | ApplicationIntegrationType[]
          | undefined) ?? [ApplicationIntegrationType.GuildInstall],
        contexts: (list(input.contexts) as InteractionContextType[] | undefined) ?? null,
      };
      const same =
        earlier &&
        JSON.stringify({ ...earlier.command, id: "", version: "" }) ===
          JSON.stringify({ id: "", ...definition, version: "" });
      const command: APIApplicationCommand = {
        id: earlier?.command.id ?? this.ids.next(),
        ...definition,
        version: same && earlier ? earlier.command.version : this.ids.next(),
      };
      return { command, options };
    });
    this.scopes.set(scope, after);
    return after.map((entry) => entry.command);
  }
}
