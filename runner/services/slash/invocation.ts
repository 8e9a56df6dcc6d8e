import { parseArgs } from "node:util";
import { parseArgsStringToArgv } from "string-argv";
import { errorMessage } from "../../ground/errors.ts";
import {
  ALIASES,
  type CommandSpec,
  commandSpec,
  type SubSpec,
  subSpec,
} from "../slash-catalogue/catalogue.ts";

/**
 * One command as a platform hands it over: Discord's options arrive named;
 * a typed line (the terminal, a Slack slash command's text) is read here
 * against the same catalogue, words by position and `--flag value`.
 */
export interface Invocation {
  command: CommandSpec;
  sub: SubSpec;
  args: Record<string, string>;
}

/** Said to the person when a line can't be read; names what was expected. */
export class UsageError extends Error {
  override name = "UsageError";
}

export function usageOf(command: CommandSpec, sub: SubSpec): string {
  const options = sub.options.map((option) => {
    const shown = option.flag
      ? `--${option.name} <${option.name}>`
      : `<${option.name}${option.rest ? "…" : ""}>`;
    return option.required ? shown : `[${shown}]`;
  });
  const part = command.subs.length > 1 ? [sub.name] : [];
  return [`/${command.name}`, ...part, ...options].join(" ");
}

/** The command and part named by `/name [sub]` (aliases followed), before any argument. */
function resolve(name: string, words: string[]): { command: CommandSpec; words: string[] } {
  const alias = ALIASES[name];
  const [first, ...more] = alias ? [...alias.split(" "), ...words] : [name, ...words];
  const command = first ? commandSpec(first) : undefined;
  if (!command) throw new UsageError(`unknown command /${name}; /help lists them`);
  return { command, words: more };
}

/** Reads a typed line: `/task add write the report --every 1d`. */
export function readLine(line: string): Invocation {
  let words: string[];
  try {
    words = parseArgsStringToArgv(line.trim());
  } catch (error) {
    throw new UsageError(`the line can't be read: ${errorMessage(error)}`);
  }
  const [head = "", ...tail] = words;
  const { command, words: rest } = resolve(head.replace(/^\//, ""), tail);
  const [word, ...after] = rest;
  const named = word === undefined ? undefined : subSpec(command, word);
  const sub =
    named ?? subSpec(command, word === undefined ? command.bare.empty : (command.bare.word ?? ""));
  if (!sub)
    throw new UsageError(
      `/${command.name} ${word ?? ""}: one of ${command.subs.map((one) => one.name).join(", ")}`,
    );
  return { command, sub, args: readArgs(command, sub, named ? after : rest) };
}

function readArgs(command: CommandSpec, sub: SubSpec, words: string[]): Record<string, string> {
  const flags = sub.options.filter((option) => option.flag);
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: words,
      options: Object.fromEntries(flags.map((flag) => [flag.name, { type: "string" as const }])),
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new UsageError(`${errorMessage(error)}; usage: ${usageOf(command, sub)}`);
  }
  const args: Record<string, string> = {};
  for (const [name, value] of Object.entries(parsed.values))
    if (typeof value === "string") args[name] = value;
  const positionals = [...parsed.positionals];
  for (const option of sub.options.filter((one) => !one.flag)) {
    const value = option.rest ? positionals.splice(0).join(" ") : positionals.shift();
    if (value) args[option.name] = value;
  }
  if (positionals.length)
    throw new UsageError(
      `too many words: ${positionals.join(" ")}; usage: ${usageOf(command, sub)}`,
    );
  return checked(command, sub, args);
}

/** Named options (Discord's): the same checks as a typed line gets. */
export function fromOptions(
  commandName: string,
  subName: string | undefined,
  options: Record<string, string>,
): Invocation {
  const command = commandSpec(commandName);
  if (!command) throw new UsageError(`unknown command /${commandName}`);
  const sub = subSpec(command, subName ?? command.bare.empty);
  if (!sub) throw new UsageError(`/${command.name} has no part "${subName ?? ""}"`);
  const known = new Set(sub.options.map((option) => option.name));
  const stray = Object.keys(options).find((name) => !known.has(name));
  if (stray) throw new UsageError(`/${command.name} ${sub.name} has no option "${stray}"`);
  return { command, sub, args: checked(command, sub, options) };
}

function checked(
  command: CommandSpec,
  sub: SubSpec,
  args: Record<string, string>,
): Record<string, string> {
  const missing = sub.options.find((option) => option.required && !args[option.name]?.trim());
  if (missing) throw new UsageError(`${missing.name} is missing; usage: ${usageOf(command, sub)}`);
  return args;
}
