import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Command } from "commander";
import { describe, expect, it } from "vitest";
import { buildProgram } from "../../runner/cli/main.ts";
import { REFERENCE_BEGIN, REFERENCE_END, renderReference } from "../../runner/cli/reference.ts";
import { PROJECT_ROOT } from "../../runner/ground/version.ts";

/**
 * docs/cli.md and `roster --help` say the same thing: every command and option
 * help shows has its place in the page, and the page's generated reference is
 * what the command tree renders today (so a changed help text, a new command
 * or a new option fails here until `node scripts/docs-cli.mjs` is run).
 */
const page = readFileSync(join(PROJECT_ROOT, "docs/cli.md"), "utf8");
const program = buildProgram();
const help = program.createHelp();

/** Each visible command's path and the long (else short) flag of each visible option. */
function visible(command: Command, path: string): Array<{ path: string; flags: string[] }> {
  const flags = help
    .visibleOptions(command)
    .map((option) => option.long ?? option.short ?? option.flags)
    .filter((flag) => flag !== "--help");
  const children = help.visibleCommands(command).filter((child) => child.name() !== "help");
  return [
    { path, flags },
    ...children.flatMap((child) => visible(child, `${path} ${child.name()}`)),
  ];
}

/** The page's section for a command: from its heading to the next heading. */
function section(path: string): string | undefined {
  const heading = `\n### ${path}\n`;
  const at = page.indexOf(heading);
  if (at < 0) return undefined;
  const next = page.indexOf("\n#", at + heading.length);
  return page.slice(at, next < 0 ? undefined : next);
}

describe("docs/cli.md", () => {
  const commands = visible(program, program.name());

  it("has a section for every command help shows, listing every option it takes", () => {
    expect(commands.length).toBeGreaterThan(40);
    const missing: string[] = [];
    for (const { path, flags } of commands) {
      const text = section(path);
      if (text === undefined) {
        missing.push(`the command "${path}"`);
        continue;
      }
      for (const flag of flags)
        if (!new RegExp(`\`[^\`]*${flag}\\b`).test(text))
          missing.push(`the option ${flag} of "${path}"`);
    }
    expect(missing, "run node scripts/docs-cli.mjs").toEqual([]);
  });

  it("says what --help says: its reference is the one the command tree renders", () => {
    const begin = page.indexOf(REFERENCE_BEGIN);
    const end = page.indexOf(REFERENCE_END);
    expect(begin, "the generated reference's markers").toBeGreaterThanOrEqual(0);
    expect(end).toBeGreaterThan(begin);
    const current = page.slice(begin, end + REFERENCE_END.length + 1);
    expect(current, "run node scripts/docs-cli.mjs").toBe(renderReference(program));
  });

  it("names no hidden command", () => {
    const hidden = program.commands.filter(
      (command) => !help.visibleCommands(program).includes(command),
    );
    for (const command of hidden) expect(section(`roster ${command.name()}`)).toBeUndefined();
  });
});
