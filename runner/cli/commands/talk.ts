/**
 * `roster talk`: declares the command that talks to a worker from this
 * terminal, turn by turn in one warm box.
 */
import type { Command } from "commander";
import { rosterPaths } from "../../ground/config/paths.ts";
import { RosterError } from "../../ground/errors.ts";

function parseSecs(value: string): number {
  const secs = Number(value);
  if (!Number.isFinite(secs) || secs <= 0)
    throw new RosterError(`--idle ${value}: expected a number of seconds above 0`, { exitCode: 2 });
  return secs;
}

export function registerTalkCommands(program: Command): void {
  program
    .command("talk <worker>")
    .description(
      "talk to a worker from this terminal: one warm box, turn by turn (Ctrl-D ends, /help)",
    )
    .option(
      "--idle <secs>",
      "end the session after this many quiet seconds ([box] talk_idle_secs, 300)",
      parseSecs,
    )
    .action(async (worker: string, flags: { idle?: number }) => {
      const [{ talk }, { terminalCommand }, { turnThroughServer }] = await Promise.all([
        import("../../services/chat/terminal/talk.ts"),
        import("../../services/slash/terminal.ts"),
        import("../../services/server/run-client.ts"),
      ]);
      const paths = rosterPaths();
      process.exitCode = await talk({
        paths,
        worker,
        // the host answers what starts with "/": the worker never sees it
        command: (line, user, channel) => terminalCommand(paths, worker, line, user, channel),
        // a linked terminal's lines go to the running server's one session for the group
        handTurn: (turn, io) => turnThroughServer(paths, turn, io),
        idleSecs: flags.idle,
        input: process.stdin,
        output: process.stdout,
        notes: process.stderr,
      });
    });
}
