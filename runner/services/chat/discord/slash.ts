import type { REST } from "@discordjs/rest";
import {
  type APIApplicationCommandAutocompleteInteraction,
  type APIApplicationCommandBasicOption,
  type APIApplicationCommandInteractionDataOption,
  type APIApplicationCommandOption,
  type APIChatInputApplicationCommandInteraction,
  ApplicationCommandOptionType,
  ApplicationCommandType,
  ChannelType,
  InteractionContextType,
  InteractionResponseType,
  MessageFlags,
  PermissionFlagsBits,
  type RESTPutAPIApplicationGuildCommandsJSONBody,
  Routes,
} from "discord-api-types/v10";
import { errorMessage } from "../../../ground/errors.ts";
import { splitText } from "../../../ground/text/message-parts.ts";
import type { CommandReply, ListenerHost } from "../../listeners/child.ts";
import { COMMANDS, type OptionSpec } from "../../slash-catalogue/catalogue.ts";
import { discordChannelId } from "./ids.ts";
import { discordRules } from "./vouch.ts";

/**
 * Discord application commands: the host's catalogue (services/slash/)
 * registered in each guild org.toml names as this deployment's own (a guild's
 * commands show at once; any other guild the bot is in gets none, and a
 * command from one is refused unjudged) and globally for DMs with the bot only, each part a subcommand, the options that
 * name a proposal, a task, a run or a worker completed as they are typed. A
 * command becomes named options for the host's slash-command core, with what
 * Discord says of the person (their roles, Manage Server); the answer is
 * theirs alone (ephemeral) unless it changed the channel itself.
 */
const CONTENT_MAX = 2_000;
/** Parts of a long answer past the first, as followups; the rest is cut. */
const MAX_FOLLOWUPS = 4;
/** How long an answer may take and still be the interaction's first response (Discord waits 3 s). */
const ANSWER_WITHIN_MS = 2_200;

const COMPLETES = new Set(["gate", "task", "run", "worker"]);

function option(spec: OptionSpec): APIApplicationCommandBasicOption {
  return {
    type: ApplicationCommandOptionType.String,
    name: spec.name,
    description: spec.description.slice(0, 100),
    required: spec.required === true,
    ...(spec.kind === "mode"
      ? { choices: ["all", "mention"].map((mode) => ({ name: mode, value: mode })) }
      : COMPLETES.has(spec.kind)
        ? { autocomplete: true }
        : {}),
  };
}

/** Discord lists required options first. */
const ordered = (options: OptionSpec[]) =>
  [...options.filter((one) => one.required), ...options.filter((one) => !one.required)].map(option);

/** The catalogue as Discord registers it: one command each, its parts as subcommands. */
export function discordCommands(): RESTPutAPIApplicationGuildCommandsJSONBody {
  return COMMANDS.map((command) => {
    const [only] = command.subs;
    const options: APIApplicationCommandOption[] =
      command.subs.length === 1 && only
        ? ordered(only.options)
        : command.subs.map((sub) => ({
            type: ApplicationCommandOptionType.Subcommand,
            name: sub.name,
            description: sub.description.slice(0, 100),
            options: ordered(sub.options),
          }));
    return {
      type: ApplicationCommandType.ChatInput,
      name: command.name,
      description: command.description.slice(0, 100),
      options,
    };
  });
}

/** A guild's whole set of commands: the catalogue in one of ours, none in any other. */
export async function registerDiscordCommands(
  rest: REST,
  applicationId: string,
  guildId: string,
  ours: boolean,
): Promise<void> {
  await rest.put(Routes.applicationGuildCommands(applicationId, guildId), {
    body: ours ? discordCommands() : [],
  });
}

/**
 * The same commands globally, offered only in a DM with the bot: a guild's
 * own registration serves its rooms, and a DM has no guild.
 */
export async function registerDiscordDmCommands(rest: REST, applicationId: string): Promise<void> {
  await rest.put(Routes.applicationCommands(applicationId), {
    body: discordCommands().map((command) => ({
      ...command,
      contexts: [InteractionContextType.BotDM],
    })),
  });
}

type Interaction =
  | APIChatInputApplicationCommandInteraction
  | APIApplicationCommandAutocompleteInteraction;

/** The subcommand named, its options as text, and the one being typed if any. */
function readOptions(options: APIApplicationCommandInteractionDataOption[] | undefined): {
  sub: string | undefined;
  values: Record<string, string>;
  focused: { name: string; value: string } | undefined;
} {
  let list = options ?? [];
  let sub: string | undefined;
  const [first] = list;
  if (first?.type === ApplicationCommandOptionType.Subcommand) {
    sub = first.name;
    list = first.options ?? [];
  }
  const values: Record<string, string> = {};
  let focused: { name: string; value: string } | undefined;
  for (const one of list) {
    if (!("value" in one)) continue;
    values[one.name] = String(one.value);
    if ("focused" in one && one.focused) focused = { name: one.name, value: String(one.value) };
  }
  return { sub, values, focused };
}

/**
 * This deployment's own guilds (org.toml `[chat.from_platform] discord_guilds`),
 * read fresh each time: commands are registered and answered only there and
 * in DMs with the bot. A bot can be invited to anyone's guild.
 */
export function ownGuilds(host: ListenerHost): readonly string[] {
  return discordRules(host.chat()).discord_guilds ?? [];
}

/** Why a command from here is not taken, or undefined when it is: a named guild, or a DM with the bot. */
function placeRefusal(host: ListenerHost, interaction: Interaction): string | undefined {
  if (interaction.guild_id)
    return ownGuilds(host).includes(interaction.guild_id)
      ? undefined
      : `Not done: this bot takes commands only in the servers its org.toml names ([chat.from_platform] discord_guilds), and ${interaction.guild_id} is not one.`;
  return interaction.channel?.type === ChannelType.DM
    ? undefined
    : "Not done: outside a server, this bot takes commands only in a DM with it.";
}

/** Who asked, where, and what Discord says of them there. */
function askerOf(interaction: Interaction) {
  const user = interaction.member?.user ?? interaction.user;
  if (!user || !interaction.channel?.id) return undefined;
  const channel = discordChannelId(
    interaction.guild_id
      ? { guild: interaction.guild_id, channel: interaction.channel.id }
      : { dmUser: user.id },
  );
  const member = interaction.member;
  const platform =
    member && interaction.guild_id
      ? {
          server: interaction.guild_id,
          roles: member.roles,
          manageServer:
            (BigInt(member.permissions) & PermissionFlagsBits.ManageGuild) ===
            PermissionFlagsBits.ManageGuild,
        }
      : undefined;
  return { user: `discord:${user.id}`, channel, ...(platform ? { platform } : {}) };
}

export async function handleDiscordAutocomplete(
  rest: REST,
  host: ListenerHost,
  interaction: APIApplicationCommandAutocompleteInteraction,
): Promise<void> {
  const asker = placeRefusal(host, interaction) ? undefined : askerOf(interaction);
  const { sub, focused } = readOptions(interaction.data.options);
  const choices =
    asker && focused
      ? await host.complete({
          ...asker,
          command: interaction.data.name,
          ...(sub ? { sub } : {}),
          option: focused.name,
          partial: focused.value,
        })
      : [];
  await rest.post(Routes.interactionCallback(interaction.id, interaction.token), {
    body: { type: InteractionResponseType.ApplicationCommandAutocompleteResult, data: { choices } },
    auth: false,
  });
}

export async function handleDiscordCommand(
  rest: REST,
  host: ListenerHost,
  interaction: APIChatInputApplicationCommandInteraction,
): Promise<void> {
  const asker = askerOf(interaction);
  if (!asker) return;
  const { sub, values } = readOptions(interaction.data.options);
  const elsewhere = placeRefusal(host, interaction);
  const answering = (
    elsewhere
      ? Promise.resolve<CommandReply>({ text: elsewhere, room: false })
      : host.command({
          ...asker,
          named: { command: interaction.data.name, ...(sub ? { sub } : {}), options: values },
        })
  ).catch(
    (error: unknown): CommandReply => ({
      text: `Not done: ${errorMessage(error)}.`,
      room: false,
    }),
  );
  const timely = await Promise.race([
    answering,
    new Promise<undefined>((resolve) =>
      setTimeout(() => resolve(undefined), ANSWER_WITHIN_MS).unref(),
    ),
  ]);
  // the interaction's token authenticates these calls; the bot's must not be sent
  const callback = (body: Record<string, unknown>) =>
    rest.post(Routes.interactionCallback(interaction.id, interaction.token), { body, auth: false });
  const followup = (content: string, flags: number) =>
    rest.post(Routes.webhook(interaction.application_id, interaction.token), {
      body: { content, flags, allowed_mentions: { parse: [] } },
      auth: false,
    });
  if (timely) {
    const [first = "(nothing to say)", ...more] = parts(timely.text);
    const flags = timely.room ? 0 : MessageFlags.Ephemeral;
    await callback({
      type: InteractionResponseType.ChannelMessageWithSource,
      data: { content: first, flags, allowed_mentions: { parse: [] } },
    });
    for (const part of more) await followup(part, flags);
    return;
  }
  // slower (an approval that sends): "thinking…" for the asker alone, then the answer in its place
  await callback({
    type: InteractionResponseType.DeferredChannelMessageWithSource,
    data: { flags: MessageFlags.Ephemeral },
  });
  const late = await answering;
  const [first = "(nothing to say)", ...more] = parts(late.text);
  await rest.patch(Routes.webhookMessage(interaction.application_id, interaction.token), {
    body: { content: first, allowed_mentions: { parse: [] } },
    auth: false,
  });
  for (const part of more) await followup(part, MessageFlags.Ephemeral);
  if (late.room)
    await rest.post(Routes.channelMessages(interaction.channel.id), {
      body: { content: parts(late.text)[0], allowed_mentions: { parse: [] } },
    });
}

/** The answer in messages Discord takes: split at lines, the tail past the followups cut. */
function parts(text: string): string[] {
  const all = splitText(text, CONTENT_MAX - 20);
  if (all.length <= MAX_FOLLOWUPS + 1) return all;
  const kept = all.slice(0, MAX_FOLLOWUPS + 1);
  kept[MAX_FOLLOWUPS] =
    `${kept[MAX_FOLLOWUPS]?.slice(0, CONTENT_MAX - 60)}\n… (${all.length - kept.length} more parts cut)`;
  return kept;
}
