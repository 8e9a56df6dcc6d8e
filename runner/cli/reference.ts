import type { Command } from "commander";

/**
 * The command reference in docs/cli.md, rendered from the command tree itself:
 * every command `--help` shows, its usage line, its description and each of
 * its options with the help's own words. `node scripts/docs-cli.mjs` writes it
 * between the markers below and a unit test fails when the file and the tree
 * disagree, so the docs and `--help` say the same thing. Hidden commands and
 * options stay out, as they do from help; `-h, --help` and `help [command]`,
 * which every command has, are said once in the prose instead.
 */
export const REFERENCE_BEGIN =
  "<!-- generated from the command tree by `node scripts/docs-cli.mjs`: edit the help texts, then run it -->";
export const REFERENCE_END = "<!-- end of the generated reference -->";

export interface ReferenceEntry {
  /** "roster", "roster box", "roster box build" */
  path: string;
  usage: string;
  description: string;
  subcommands: string[];
  /** As help shows each one: "-v, --verbose", "--worker <name>". */
  options: Array<{ term: string; long: string | undefined; description: string }>;
}

/** Every visible command, the root first, depth first in the order help lists them. */
export function referenceEntries(program: Command): ReferenceEntry[] {
  const help = program.createHelp();
  const entries: ReferenceEntry[] = [];
  const visit = (command: Command, path: string) => {
    const children = help.visibleCommands(command).filter((child) => child.name() !== "help");
    entries.push({
      path,
      usage: `${path} ${command.usage()}`.trim(),
      description: command.description(),
      subcommands: children.map((child) => child.name()),
      options: help
        .visibleOptions(command)
        .filter((option) => option.long !== "--help")
        .map((option) => ({
          term: help.optionTerm(option),
          long: option.long,
          description: help.optionDescription(option),
        })),
    });
    for (const child of children) visit(child, `${path} ${child.name()}`);
  };
  visit(program, program.name());
  return entries;
}

/** Help text as markdown prose: `<name>` would be read as an HTML tag, `*` as emphasis. */
const prose = (text: string) => text.replace(/\s*\n\s*/g, " ").replace(/([\\<*])/g, "\\$1");

/** The reference, markers included. */
export function renderReference(program: Command): string {
  const lines = [REFERENCE_BEGIN, ""];
  for (const entry of referenceEntries(program)) {
    lines.push(`### ${entry.path}`, "", `\`${entry.usage}\``, "", prose(entry.description), "");
    if (entry.subcommands.length > 0)
      lines.push(`Commands: ${entry.subcommands.map((name) => `\`${name}\``).join(", ")}.`, "");
    for (const option of entry.options)
      lines.push(`- \`${option.term}\`: ${prose(option.description)}`);
    if (entry.options.length > 0) lines.push("");
  }
  lines.push(REFERENCE_END);
  return `${lines.join("\n")}\n`;
}

/** The document with its generated part replaced; an error when the markers are missing. */
export function withReference(document: string, reference: string): string {
  const begin = document.indexOf(REFERENCE_BEGIN);
  const end = document.indexOf(REFERENCE_END);
  if (begin < 0 || end < begin)
    throw new Error("docs/cli.md: the markers of the generated reference are missing");
  const after = document.slice(end + REFERENCE_END.length).replace(/^\n/, "");
  return `${document.slice(0, begin)}${reference}${after}`;
}
