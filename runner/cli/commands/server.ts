/**
 * `roster server …`: declares the commands for the daemon that holds the
 * gateway, the action host, chat sessions and task dispatch.
 */
import { type Command, Option } from "commander";
import { parseAddr } from "../../boundary/gateway/process/listen.ts";
import { RosterError } from "../../ground/errors.ts";
import type { ServerStartFlags } from "../does/server.ts";

// Implementations load when a command runs, so `roster --help` stays instant.
const doesServer = () => import("../does/server.ts");

function parseCap(value: string): number {
  const cap = Number(value);
  if (!Number.isInteger(cap) || cap < 1)
    throw new RosterError(`--cap ${value}: expected a whole number of boxes, 1 or more`, {
      exitCode: 2,
    });
  return cap;
}

export function registerServerCommands(program: Command): void {
  const server = program
    .command("server")
    .description("the daemon: gateway, action host, chat sessions and task dispatch");

  server
    .command("start")
    .description("run the server in the foreground (SIGTERM or Ctrl-C stops it cleanly)")
    .option("--cap <n>", "boxes at once, task runs and sessions together", parseCap, 3)
    .option("--once", "run the tasks that are due, wait for them, then exit (for cron and tests)")
    .option("--no-listen", "start no chat listeners")
    .option("--addr <host:port>", "where the gateway listens (repeatable)", parseAddr)
    .option("--no-console", "serve no web console ([console] in org.toml says where it listens)")
    .action(async (flags: ServerStartFlags) => (await doesServer()).startServerCommand(flags));

  // one chat listener, started and supervised by the server (runner/services/listeners/)
  server
    .command("listener <worker> <platform>", { hidden: true })
    .addOption(new Option("--internal").hideHelp())
    .action(async (worker: string, platform: string) =>
      (await doesServer()).listenerCommand(worker, platform),
    );

  server
    .command("status")
    .description("is the server running, does its gateway answer, what is it doing")
    .option("--json", "the same as JSON")
    .action(async (flags: { json?: boolean }) => (await doesServer()).serverStatusCommand(flags));
}
