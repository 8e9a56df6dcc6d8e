import { Command, CommanderError } from "commander";
import { userFailure } from "../ground/errors.ts";
import { ROSTER_VERSION } from "../ground/version.ts";
import { registerActionCommands } from "./action-commands.ts";
import { withOurSpelling } from "./aliases.ts";
import { registerBoxCommands } from "./box-commands.ts";
import { registerBudgetCommands } from "./budget-commands.ts";
import { registerChannelCommands } from "./channel-commands.ts";
import { registerCompletionCommand } from "./completion.ts";
import { registerConnectionCommands } from "./connection-commands.ts";
import { registerGatewayCommands } from "./gateway-commands.ts";
import { registerRunCommands } from "./run-commands.ts";
import { registerServerCommands } from "./server-commands.ts";
import { registerTalkCommands } from "./talk-commands.ts";
import { registerTaskCommands } from "./task-commands.ts";
import { registerWorkerCommands } from "./worker-commands.ts";

/**
 * The `roster` command tree. Commands are thin: they parse, call into a runner/
 * folder, and print. Errors a user can act on are one line; exit 2 means
 * "refused" (bad config, bad usage), 1 a failure.
 */
export function buildProgram(): Command {
  const program = new Command("roster")
    .description("Run AI workers in locked container boxes with one governed door out.")
    .version(ROSTER_VERSION, "-V, --version", "print roster's version")
    .showHelpAfterError()
    .exitOverride();
  registerBoxCommands(program);
  registerGatewayCommands(program);
  registerBudgetCommands(program);
  registerRunCommands(program);
  registerActionCommands(program);
  registerTaskCommands(program);
  registerChannelCommands(program);
  registerTalkCommands(program);
  registerServerCommands(program);
  registerWorkerCommands(program);
  registerConnectionCommands(program);
  // last: its scripts are generated from everything registered above
  registerCompletionCommand(program);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    // the public roster's spellings (aliases.ts) are read as ours
    await program.parseAsync(withOurSpelling(argv));
    // a command may report a finding (doctor) through the exit status
    return typeof process.exitCode === "number" ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      // help and version exit "successfully" through the same path
      return error.exitCode === 0 ? 0 : 2;
    }
    const failure = userFailure(error);
    if (failure) {
      process.stderr.write(`roster: ${failure.message}\n`);
      if (failure.hint) process.stderr.write(`  ${failure.hint}\n`);
      return failure.exitCode;
    }
    throw error;
  }
}
