/**
 * `roster talk`: declares the command that talks to a worker from this
 * terminal, turn by turn in one warm box. What it does lives in
 * runner/cli/does/talk.ts.
 */
import type { Command } from "commander";
import { RosterError } from "../../ground/errors.ts";

function parseSecs(value: string): number {
  const secs = Number(value);
  if (!Number.isFinite(secs) || secs <= 0)
    throw new RosterError(`--idle ${value}: expected a number of seconds above 0`, { exitCode: 2 });
  return secs;
}

export function registerTalkCommands(program: Command): void {
  program
    .command("talk [worker]")
    .description(
      "talk to a worker from this terminal: one warm box, turn by turn (Ctrl-D ends, /help); with no worker, the workers there are (none yet: elf is made and talked to)",
    )
    .option(
      "--idle <secs>",
      "end the session after this many quiet seconds ([box] talk_idle_secs, 300)",
      parseSecs,
    )
    .action(async (worker: string | undefined, flags: { idle?: number }) =>
      (await import("../does/talk.ts")).talkCommand(worker, flags),
    );
}
