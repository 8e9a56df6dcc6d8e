import { Command, CommanderError, Option } from "commander";
import { describeHostNode, hostNode, oldNodeRefusal } from "../ground/host-node.ts";
import { rosterVersionLine } from "../ground/version.ts";
import { withOurSpelling } from "./aliases.ts";
import { registerActionCommands } from "./commands/action.ts";
import { registerBoxCommands } from "./commands/box.ts";
import { registerBudgetCommands } from "./commands/budget.ts";
import { registerChannelCommands } from "./commands/channel.ts";
import { registerConfigCommands } from "./commands/config.ts";
import { registerConnectionCommands } from "./commands/connection.ts";
import { registerGatewayCommands } from "./commands/gateway.ts";
import { registerMemoryCommands } from "./commands/memory.ts";
import { registerPolicyCommands } from "./commands/policy.ts";
import { registerRunCommands } from "./commands/run.ts";
import { registerServerCommands } from "./commands/server.ts";
import { registerTalkCommands } from "./commands/talk.ts";
import { registerTaskCommands } from "./commands/task.ts";
import { registerWorkerCommands } from "./commands/worker.ts";
import { registerCompletionCommand } from "./completion.ts";
import { failureStatus } from "./failure.ts";

/**
 * The `roster` command tree. Commands are thin: they parse, call into a runner/
 * folder, and print. Errors a user can act on are one line; exit 2 means
 * "refused" (bad config, bad usage), 1 a failure.
 */
export function buildProgram(): Command {
  const program = new Command("roster")
    .description("Run AI workers in locked container boxes with one governed door out.")
    // the version and the commit, read from git only when asked (version.ts), and the Node
    .addOption(
      new Option(
        "-V, --version",
        "print roster's version, the commit it was built from and the Node it runs on",
      ),
    )
    .showHelpAfterError()
    .exitOverride()
    // before any command runs (not for --help): the chat platforms' terms reach the
    // config, the boxes and the router (ground/chat/terms.ts); loaded here, not at
    // start, so `roster --help` and completion load no schema library. `roster run`
    // loads them itself, only when it starts the box: handed to a server, it reads
    // no config, and the ~470 KB they bring cost its answer ~0.1 s (cli/does/run.ts)
    .hook("preAction", async (_program, action) => {
      if (action.name() === "run" && action.parent === program) return;
      await import("../services/chat/platforms.ts");
    })
    .on("option:version", () => {
      const line = `${rosterVersionLine()} on ${describeHostNode(hostNode())}`;
      process.stdout.write(`${line}\n`);
      throw new CommanderError(0, "commander.version", line);
    });
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
  registerMemoryCommands(program);
  registerConnectionCommands(program);
  registerPolicyCommands(program);
  registerConfigCommands(program);
  // last: its scripts are generated from everything registered above
  registerCompletionCommand(program);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  // bin/roster.mjs starts on a supported Node; the compiled runner or the
  // TypeScript started some other way may not be, and is refused before it does anything
  const tooOld = oldNodeRefusal();
  if (tooOld) {
    process.stderr.write(`roster: ${tooOld}\n`);
    return 2;
  }
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
    return failureStatus(error);
  }
}
