/**
 * The options of a slash command a user runs, for the Discord stand-in
 * (discord-stand-in.ts), a TEST DOUBLE for Discord, which can't be reached
 * from here, speaking its real wire protocol: the options as they go out in
 * INTERACTION_CREATE's `data.options` (converted from a simpler nested form
 * when a test gives one), checked against the registered command the way
 * Discord's client only lets a user send what the command takes, and the
 * `data.resolved` Discord adds for snowflake options (discord-commands.ts
 * lists the choices made where Discord isn't observable).
 */
import {
  type APIInteractionDataResolved,
  ApplicationCommandOptionType,
  ChannelType,
} from "discord-api-types/v10";
import type { OptionSpec } from "./discord-command-registry.ts";
import { choiceValueError } from "./discord-command-validation.ts";
import { isRecord } from "./discord-http.ts";
import { apiUser, member, NO_FLAGS } from "./discord-objects.ts";

/** Options in a simpler nested form: `{ city: "Paris" }`, `{ forecast: { city: "Paris" } }` for a subcommand. */
export interface SimpleOptions {
  [name: string]: string | number | boolean | SimpleOptions;
}

/** One data option as the double handles it before it goes out as Discord's union type. */
export interface WireOption {
  name: string;
  type: ApplicationCommandOptionType;
  value?: string | number | boolean;
  options?: WireOption[];
  focused?: boolean;
}

const SUBS = [
  ApplicationCommandOptionType.Subcommand,
  ApplicationCommandOptionType.SubcommandGroup,
];
const SNOWFLAKE = /^[0-9]{17,20}$/;

export function wireOf(value: unknown): WireOption[] {
  if (!Array.isArray(value)) return [];
  return value.filter(isRecord).map((option) => ({
    name: String(option.name),
    type: option.type as ApplicationCommandOptionType,
    ...(["string", "number", "boolean"].includes(typeof option.value)
      ? { value: option.value as string | number | boolean }
      : {}),
    ...(Array.isArray(option.options) ? { options: wireOf(option.options) } : {}),
    ...(option.focused === true ? { focused: true } : {}),
  }));
}

/** The simple form converted against the registered options, each taking its option's type. */
export function fromSimple(
  simple: SimpleOptions,
  specs: readonly OptionSpec[],
  where: string,
): WireOption[] {
  return Object.entries(simple).map(([name, value]) => {
    const spec = specs.find((known) => known.name === name);
    if (!spec) throw new Error(`${where} has no option ${name}`);
    if (typeof value === "object") {
      if (!SUBS.includes(spec.type)) throw new Error(`${where} ${name} takes a value, not options`);
      return {
        name,
        type: spec.type,
        options: fromSimple(value, spec.options ?? [], `${where} ${name}`),
      };
    }
    return { name, type: spec.type, value };
  });
}

/** Why a value can't be one of this option, or undefined. */
function valueError(option: WireOption, spec: OptionSpec): string | undefined {
  const { value } = option;
  const T = ApplicationCommandOptionType;
  if (spec.type === T.String || spec.type === T.Integer || spec.type === T.Number) {
    const refused = choiceValueError("", value, spec.type);
    if (refused) return refused.message;
    if (spec.choices && !spec.choices.some((choice) => choice.value === value)) {
      return `${String(value)} isn't one of its choices`;
    }
    const size = typeof value === "string" ? value.length : Number(value);
    const [min, max] =
      typeof value === "string"
        ? [spec.min_length, spec.max_length]
        : [spec.min_value, spec.max_value];
    if ((min !== undefined && size < min) || (max !== undefined && size > max))
      return "out of bounds";
    return undefined;
  }
  if (spec.type === T.Boolean) return typeof value === "boolean" ? undefined : "not a boolean";
  if (spec.type === T.Attachment) return "attachment options aren't spoken by the double";
  return typeof value === "string" && SNOWFLAKE.test(value) ? undefined : "not a snowflake";
}

/**
 * Throws unless the options are ones the registered command takes: known
 * names of the right type, one subcommand where there are subcommands, valid
 * values and every required option (an autocomplete's may still be missing).
 */
export function check(
  given: WireOption[],
  specs: readonly OptionSpec[],
  where: string,
  partial: boolean,
): void {
  const names = new Set<string>();
  for (const option of given) {
    const spec = specs.find((known) => known.name === option.name);
    if (!spec) throw new Error(`${where} has no option ${option.name}`);
    if (spec.type !== option.type)
      throw new Error(`${where} ${option.name} is type ${spec.type}, not ${option.type}`);
    if (names.has(option.name)) throw new Error(`${where} ${option.name} is given twice`);
    names.add(option.name);
    if (SUBS.includes(spec.type)) {
      check(option.options ?? [], spec.options ?? [], `${where} ${option.name}`, partial);
      continue;
    }
    if (option.focused) {
      if (!spec.autocomplete)
        throw new Error(`${where} ${option.name} isn't an autocomplete option`);
      if (typeof option.value !== "string")
        throw new Error(`${where} ${option.name}: a focused value is what was typed, a string`);
      continue;
    }
    const refused = valueError(option, spec);
    if (refused) throw new Error(`${where} ${option.name}: ${refused}`);
  }
  const hasSubs = specs.some((spec) => SUBS.includes(spec.type));
  if (hasSubs && given.length !== 1) throw new Error(`${where} needs exactly one subcommand`);
  const missing = specs.find((spec) => spec.required && !names.has(spec.name));
  if (missing && !partial) throw new Error(`${where} needs its required option ${missing.name}`);
}

/** The focused option, wherever it is nested. */
export function focusedOf(options: WireOption[]): WireOption | undefined {
  for (const option of options) {
    if (option.focused) return option;
    const inner = focusedOf(option.options ?? []);
    if (inner) return inner;
  }
  return undefined;
}

/** Marks `name` focused in the innermost level (the chosen subcommand's options). */
export function focus(options: WireOption[], name: string): WireOption[] {
  const sub = options.find((option) => SUBS.includes(option.type));
  if (sub)
    return options.map((option) =>
      option === sub ? { ...sub, options: focus(sub.options ?? [], name) } : option,
    );
  if (!options.some((option) => option.name === name))
    throw new Error(`no option ${name} to focus`);
  return options.map((option) => (option.name === name ? { ...option, focused: true } : option));
}

/** The spec a (possibly nested) option was registered as. */
export function specOf(
  specs: readonly OptionSpec[],
  options: WireOption[],
  target: WireOption,
): OptionSpec | undefined {
  for (const option of options) {
    const spec = specs.find((known) => known.name === option.name);
    if (option === target) return spec;
    const inner = spec && specOf(spec.options ?? [], option.options ?? [], target);
    if (inner) return inner;
  }
  return undefined;
}

/** Who ran it, where, and what Discord resolved its snowflake options to. */
export function resolvedOf(
  options: WireOption[],
  specs: readonly OptionSpec[],
  guildId: string | undefined,
): APIInteractionDataResolved | undefined {
  const resolved: APIInteractionDataResolved = {};
  const T = ApplicationCommandOptionType;
  const walk = (given: WireOption[], known: readonly OptionSpec[]) => {
    for (const option of given) {
      const spec = known.find((candidate) => candidate.name === option.name);
      if (option.options) walk(option.options, spec?.options ?? []);
      const id = typeof option.value === "string" ? option.value : "";
      if (!spec || option.focused || !SNOWFLAKE.test(id)) continue;
      if (spec.type === T.User || spec.type === T.Mentionable) {
        resolved.users = {
          ...resolved.users,
          [id]: apiUser({ id, username: `user${id.slice(-4)}` }),
        };
        if (guildId) {
          const { deaf: _deaf, mute: _mute, ...fields } = member();
          resolved.members = { ...resolved.members, [id]: { ...fields, permissions: "0" } };
        }
      } else if (spec.type === T.Role) {
        const role = {
          id,
          name: `role${id.slice(-4)}`,
          color: 0,
          colors: { primary_color: 0, secondary_color: null, tertiary_color: null },
          hoist: false,
          position: 1,
          permissions: "0",
          managed: false,
          mentionable: false,
          flags: NO_FLAGS,
        };
        resolved.roles = { ...resolved.roles, [id]: role };
      } else if (spec.type === T.Channel) {
        const channel = {
          id,
          name: `channel${id.slice(-4)}`,
          type: ChannelType.GuildText as const,
          permissions: "0",
        };
        resolved.channels = { ...resolved.channels, [id]: channel };
      }
    }
  };
  walk(options, specs);
  return Object.keys(resolved).length > 0 ? resolved : undefined;
}
