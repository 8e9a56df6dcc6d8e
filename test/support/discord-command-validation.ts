/**
 * Application command validation for the Discord stand-in
 * (discord-stand-in.ts), a TEST DOUBLE for Discord, which can't be reached
 * from here, speaking its real wire protocol: what Discord refuses in a bulk
 * overwrite of commands (discord-command-registry.ts lists the rules and the
 * choices made where Discord isn't observable) and in an autocomplete's
 * type 8 answer, as the FieldError its "Invalid Form Body" 400 names.
 */
import { ApplicationCommandOptionType, ApplicationCommandType } from "discord-api-types/v10";
import { type FieldError, isRecord } from "./discord-http.ts";

const NAME = /^[-_\p{L}\p{N}]{1,32}$/u;
const MAX_OPTIONS = 25;
const MAX_CHOICES = 25;
const MAX_COMMANDS = 100;
const NESTING = {
  code: "APPLICATION_COMMAND_OPTIONS_TYPE_INVALID",
  message:
    "Sub-command and sub-command group option types are mutually exclusive to all other types",
};
const SUBS = [
  ApplicationCommandOptionType.Subcommand,
  ApplicationCommandOptionType.SubcommandGroup,
];
const AUTOCOMPLETES = [
  ApplicationCommandOptionType.String,
  ApplicationCommandOptionType.Integer,
  ApplicationCommandOptionType.Number,
];

const required = (field: string): FieldError => ({
  field,
  code: "BASE_TYPE_REQUIRED",
  message: "This field is required",
});
const badLength = (field: string, min: number, max: number): FieldError => ({
  field,
  code: "BASE_TYPE_BAD_LENGTH",
  message: `Must be between ${min} and ${max} in length.`,
});
const tooMany = (field: string, max: number): FieldError => ({
  field,
  code: "BASE_TYPE_MAX_LENGTH",
  message: `Must be ${max} or fewer in length.`,
});
const notList = (field: string): FieldError => ({
  field,
  code: "LIST_TYPE_CONVERT",
  message: "Only iterables may be used in a ListType",
});
const notModel = (field: string): FieldError => ({
  field,
  code: "MODEL_TYPE_CONVERT",
  message: "Only dictionaries may be used in a ModelType",
});

export function list(value: unknown): unknown[] | undefined {
  return Array.isArray(value) ? (value as unknown[]) : undefined;
}

/** A name Discord refuses, or undefined; `strict` for CHAT_INPUT commands and options. */
function nameError(field: string, name: unknown, strict: boolean): FieldError | undefined {
  if (typeof name !== "string") return required(field);
  if (name.length < 1 || name.length > 32) return badLength(field, 1, 32);
  if (strict && (!NAME.test(name) || name !== name.toLowerCase())) {
    return { field, code: "APPLICATION_COMMAND_INVALID_NAME", message: "Command name is invalid" };
  }
  return undefined;
}

function descriptionError(field: string, description: unknown): FieldError | undefined {
  if (typeof description !== "string") return required(field);
  if (description.length < 1 || description.length > 100) return badLength(field, 1, 100);
  return undefined;
}

/** What Discord refuses in one option's choices, given the option's type. */
function choicesError(
  field: string,
  choices: unknown,
  type: ApplicationCommandOptionType,
): FieldError | undefined {
  const given = list(choices);
  if (!given) return notList(field);
  if (!AUTOCOMPLETES.includes(type)) {
    return {
      field,
      code: "APPLICATION_COMMAND_OPTION_CHOICES_INVALID",
      message: "Choices are only allowed on string, integer and number options",
    };
  }
  if (given.length > MAX_CHOICES) return tooMany(field, MAX_CHOICES);
  for (const [i, choice] of given.entries()) {
    const at = `${field}.${i}`;
    if (!isRecord(choice)) return notModel(at);
    if (typeof choice.name !== "string") return required(`${at}.name`);
    if (choice.name.length < 1 || choice.name.length > 100) return badLength(`${at}.name`, 1, 100);
    const refused = choiceValueError(`${at}.value`, choice.value, type);
    if (refused) return refused;
  }
  return undefined;
}

/** A choice's value refused for an option of this type (string ≤100, integer, number). */
export function choiceValueError(
  field: string,
  value: unknown,
  type: ApplicationCommandOptionType,
): FieldError | undefined {
  if (type === ApplicationCommandOptionType.String) {
    if (typeof value !== "string")
      return { field, code: "BASE_TYPE_STRING", message: "Must be a string." };
    return value.length > 100 ? badLength(field, 1, 100) : undefined;
  }
  const integer = type === ApplicationCommandOptionType.Integer;
  if (
    typeof value !== "number" ||
    !Number.isFinite(value) ||
    (integer && !Number.isInteger(value))
  ) {
    const kind = integer ? "int" : "number";
    return {
      field,
      code: "NUMBER_TYPE_COERCE",
      message: `Value "${String(value)}" is not ${kind}.`,
    };
  }
  return undefined;
}

/**
 * What Discord refuses in an options list at one level: "command" (a
 * command's own), "group" (a subcommand group's, subcommands only) or
 * "subcommand" (plain options only).
 */
function optionsError(
  field: string,
  options: unknown,
  level: "command" | "group" | "subcommand",
): FieldError | undefined {
  if (options === undefined) return undefined;
  const given = list(options);
  if (!given) return notList(field);
  if (given.length > MAX_OPTIONS) return tooMany(field, MAX_OPTIONS);
  const names = new Set<string>();
  let optionalSeen = false;
  const types = given.map((option) => (isRecord(option) ? option.type : undefined));
  const subs = types.filter((type) => SUBS.some((sub) => sub === type)).length;
  if (subs > 0 && subs < given.length) return { field, ...NESTING };
  for (const [i, option] of given.entries()) {
    const at = `${field}.${i}`;
    if (!isRecord(option)) return notModel(at);
    const type = Object.values(ApplicationCommandOptionType).find((known) => known === option.type);
    if (typeof type !== "number") {
      return {
        field: `${at}.type`,
        code: "BASE_TYPE_CHOICES",
        message: "Value must be one of {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}.",
      };
    }
    const refused =
      nameError(`${at}.name`, option.name, true) ??
      descriptionError(`${at}.description`, option.description);
    if (refused) return refused;
    if (names.has(String(option.name))) {
      return {
        field: `${at}.name`,
        code: "APPLICATION_COMMAND_OPTIONS_DUPLICATE_NAME",
        message: "Application command option names must be unique",
      };
    }
    names.add(String(option.name));
    const isSub = SUBS.includes(type);
    const nestable =
      (type === ApplicationCommandOptionType.SubcommandGroup && level === "command") ||
      (type === ApplicationCommandOptionType.Subcommand && level !== "subcommand");
    if (
      (isSub && !nestable) ||
      (level === "group" && type !== ApplicationCommandOptionType.Subcommand)
    ) {
      return { field: `${at}.type`, ...NESTING };
    }
    if (isSub) {
      const inner = type === ApplicationCommandOptionType.SubcommandGroup ? "group" : "subcommand";
      const nested = optionsError(`${at}.options`, option.options, inner);
      if (nested) return nested;
      continue;
    }
    if (option.required === true && optionalSeen) {
      return {
        field: at,
        code: "APPLICATION_COMMAND_OPTIONS_REQUIRED_INVALID",
        message: "Required options must be placed before non-required options",
      };
    }
    if (option.required !== true) optionalSeen = true;
    if (option.choices !== undefined) {
      const bad = choicesError(`${at}.choices`, option.choices, type);
      if (bad) return bad;
    }
    if (option.autocomplete === true) {
      if (option.choices !== undefined && list(option.choices)?.length !== 0) {
        return {
          field: `${at}.autocomplete`,
          code: "APPLICATION_COMMAND_OPTIONS_AUTOCOMPLETE_CHOICES",
          message: "Autocomplete and choices are mutually exclusive",
        };
      }
      if (!AUTOCOMPLETES.includes(type)) {
        return {
          field: `${at}.autocomplete`,
          code: "APPLICATION_COMMAND_OPTIONS_AUTOCOMPLETE_INVALID",
          message: "Autocomplete is only allowed on string, integer and number options",
        };
      }
    }
  }
  return undefined;
}

/** What Discord refuses in a bulk overwrite's body, or undefined when it takes it. */
export function commandsError(body: unknown): FieldError | undefined {
  const given = list(body);
  if (!given) return notList("");
  if (given.length > MAX_COMMANDS) return tooMany("", MAX_COMMANDS);
  const seen = new Set<string>();
  for (const [i, command] of given.entries()) {
    if (!isRecord(command)) return notModel(String(i));
    const type = command.type ?? ApplicationCommandType.ChatInput;
    if (
      type !== ApplicationCommandType.ChatInput &&
      type !== ApplicationCommandType.User &&
      type !== ApplicationCommandType.Message
    ) {
      return {
        field: `${i}.type`,
        code: "BASE_TYPE_CHOICES",
        message: "Value must be one of {1, 2, 3}.",
      };
    }
    const chatInput = type === ApplicationCommandType.ChatInput;
    const refused =
      nameError(`${i}.name`, command.name, chatInput) ??
      (chatInput ? descriptionError(`${i}.description`, command.description) : undefined) ??
      (chatInput ? optionsError(`${i}.options`, command.options, "command") : undefined);
    if (refused) return refused;
    const key = `${type} ${String(command.name)}`;
    if (seen.has(key)) {
      return {
        field: "",
        code: "APPLICATION_COMMANDS_DUPLICATE_NAME",
        message: "Application command names must be unique",
      };
    }
    seen.add(key);
  }
  return undefined;
}

/** The type 8 callback's data refused as Discord refuses it, for an option of this type. */
export function autocompleteChoicesError(
  data: Record<string, unknown>,
  type: ApplicationCommandOptionType,
): FieldError | undefined {
  const { choices } = data;
  if (!Array.isArray(choices)) {
    return { field: "choices", code: "BASE_TYPE_REQUIRED", message: "This field is required" };
  }
  if (choices.length > MAX_CHOICES) {
    return {
      field: "choices",
      code: "BASE_TYPE_MAX_LENGTH",
      message: `Must be ${MAX_CHOICES} or fewer in length.`,
    };
  }
  for (const [i, choice] of (choices as unknown[]).entries()) {
    if (!isRecord(choice)) {
      return {
        field: `choices.${i}`,
        code: "MODEL_TYPE_CONVERT",
        message: "Only dictionaries may be used in a ModelType",
      };
    }
    const name = choice.name;
    if (typeof name !== "string" || name.length < 1 || name.length > 100) {
      return {
        field: `choices.${i}.name`,
        code: "BASE_TYPE_BAD_LENGTH",
        message: "Must be between 1 and 100 in length.",
      };
    }
    const refused = choiceValueError(`choices.${i}.value`, choice.value, type);
    if (refused) return refused;
  }
  return undefined;
}
