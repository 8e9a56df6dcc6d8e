import { type Command, CommanderError } from "commander";
import { describe, expect, it } from "vitest";
import { withOurSpelling } from "../../runner/cli/aliases.ts";
import { buildProgram } from "../../runner/cli/main.ts";

/**
 * Every command line of the public roster's CLI reference (its docs/cli.md,
 * 0.3.2: the tree and the examples beside it) parses here: commander takes
 * the words, options and arguments and reaches a command's action, which this
 * test stops before it runs. A line refused as an unknown command, an unknown
 * option or a missing argument fails, naming the line. The lines are written
 * here from that page's grammar, with ids a user would type.
 */
const PUBLIC_CLI_LINES: readonly string[] = [
  "init",
  "talk",
  "talk dobby",
  "talk dobby --idle 300",
  // server
  "server",
  "server start",
  "server start --cap 3 --once --no-listen --addr 127.0.0.1:7300",
  "server run --cap 2",
  "server status",
  "server status --json",
  "server validate",
  "server deploy",
  "server approvals",
  "server approvals ls",
  "server approvals ls --json",
  "server approvals show g-1a2b3c4d",
  "server approvals approve g-1a2b3c4d",
  "server approvals approve g-1a2b3c4d looks right",
  "server approvals deny g-1a2b3c4d not this week",
  "server runs",
  "server runs ls",
  "server runs ls --worker dobby --limit 20 --json",
  "server runs show 0192ab",
  "server runs context 0192ab",
  "server runs context 0192ab --all",
  "server runs recall 0192ab",
  "server channel ls",
  // channel
  "channel",
  "channel ls",
  "channel ls --json",
  "channel show 1451951375079",
  "channel trust 1451951375079",
  "channel untrust 1451951375079",
  "channel link manas term-manas-dobby 1451951375079",
  "channel unlink 1451951375079",
  "channel rm 1451951375079",
  "channel rm 1451951375079 --yes",
  "channel set 1451951375079 mode mention",
  "channel set 1451951375079 memory off",
  "channel set 1451951375079 memory-notes 10",
  // connection
  "connection",
  "connection catalog",
  "connection add",
  "connection add github --worker dobby",
  "connection add github --worker dobby --worker elf --verify",
  "connection add anthropic --auth api_key",
  "connection add linear --org --use capability",
  "connection add --name weather --host api.weather.example --header Authorization:Bearer\\ {token} --env WEATHER_TOKEN --method GET --worker dobby",
  "connection add acme --declare",
  "connection grant github dobby",
  "connection grant discord dobby --restrict servers=1234567890",
  "connection grant discord dobby --restrict surfaces=public,dm",
  "connection grant github --org",
  "connection revoke github dobby",
  "connection revoke github --org",
  "connection ls",
  "connection ls --json",
  "connection rm github",
  // worker
  "worker",
  "worker add dobby",
  "worker init dobby",
  "worker ls",
  "worker ls --json",
  "worker show dobby",
  "worker show dobby --json",
  "worker trust dobby",
  "worker trust dobby --json",
  "worker run dobby summarise the inbox",
  "worker run dobby --ceiling 10 summarise the inbox",
  "worker rm dobby",
  "worker rm dobby --yes",
  "worker chat dobby",
  "worker chat dobby --idle 20",
  "worker task",
  "worker task add dobby write the weekly notes",
  "worker task add dobby --ceiling 20 --proactive write the weekly notes",
  "worker task add dobby --repo notes --base main fix the typo in the index",
  "worker task relay dobby --from alice@example.com please look at the build",
  "worker task relay dobby please look at the build",
  "worker task ls",
  "worker task ls dobby",
  "worker task ls dobby --json",
  "worker task show t-1a2b",
  "worker task requeue t-1a2b",
  "worker memory ls dobby",
  "worker memory ls dobby --scope worker",
  "worker memory ls dobby --scope channel --scope-id 1451951375079",
  "worker memory show dobby ann",
  "worker memory correct dobby ann Ann runs payments and prefers short answers",
  "worker memory rm dobby ann",
  "worker memory pin dobby ann",
  "worker memory unpin dobby ann",
  "worker memory disable dobby ann",
  "worker memory enable dobby ann",
  "worker memory compact dobby",
  "worker knowledge dobby",
  "worker restore dobby --list",
  // conventions
  "completions bash",
  "help server",
  "help worker task",
  "-V",
  "--version",
  "server --help",
];

/** Splits a line as a shell would for these lines: spaces, `\ ` keeps one. */
function words(line: string): string[] {
  return line
    .replaceAll("\\ ", "\u0000")
    .split(" ")
    .filter(Boolean)
    .map((word) => word.replaceAll("\u0000", " "));
}

class Reached extends Error {
  constructor(readonly command: string) {
    super(`reached ${command}`);
  }
}

const fullName = (command: Command): string => {
  const names: string[] = [];
  for (let at: Command | null = command; at?.parent; at = at.parent) names.unshift(at.name());
  return names.join(" ");
};

/** Parses one line with the real tree; what commander made of it. */
async function parse(line: string): Promise<{ reached?: string; refused?: string }> {
  const program = buildProgram();
  let output = "";
  const quiet = (command: Command) => {
    command.exitOverride().configureOutput({
      writeOut: () => {},
      writeErr: (text) => {
        output += text;
      },
    });
    for (const sub of command.commands) quiet(sub);
  };
  quiet(program);
  // runs after main.ts's own hook: the action never runs
  program.hook("preAction", (_root, action) => {
    throw new Reached(fullName(action));
  });
  try {
    await program.parseAsync(withOurSpelling(["node", "roster", ...words(line)]));
    return { refused: `parsed but reached no action${output ? `: ${output.trim()}` : ""}` };
  } catch (error) {
    if (error instanceof Reached) return { reached: error.command };
    if (error instanceof CommanderError) {
      // help and version end here, successfully
      if (error.exitCode === 0) return { reached: error.code };
      return { refused: output.trim() || error.message };
    }
    throw error;
  }
}

describe("every command line of the public roster's CLI reference parses here", () => {
  it.each(PUBLIC_CLI_LINES.map((line) => [line]))("roster %s", async (line) => {
    const result = await parse(line);
    expect(result.refused, `roster ${line}`).toBeUndefined();
    expect(result.reached).toBeTruthy();
  });

  it("a line that is not roster's is refused (the check can fail)", async () => {
    for (const line of ["server frobnicate", "worker run", "connection ls --colour"]) {
      expect((await parse(line)).refused, line).toBeTruthy();
    }
  });
});
