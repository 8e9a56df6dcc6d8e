/**
 * `roster server …`: declares the commands for the daemon that holds the
 * gateway, the action host, chat sessions and task dispatch.
 */
import { type Command, Option } from "commander";
import { rosterPaths } from "../config/paths.ts";
import { RosterError } from "../errors.ts";
import type { ListenAddress } from "../gateway/gateway.ts";
import { parseAddr } from "../gateway/listen.ts";

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
    .action(
      async (flags: {
        cap: number;
        once?: boolean;
        listen: boolean;
        console: boolean;
        addr?: ListenAddress[];
      }) => {
        const { startServer } = await import("../server/daemon.ts");
        process.exitCode = await startServer({
          paths: rosterPaths(),
          cap: flags.cap,
          once: flags.once ?? false,
          noListen: !flags.listen,
          noConsole: !flags.console,
          ...(flags.addr ? { listen: flags.addr } : {}),
          note: (text) => process.stderr.write(`roster: ${text}\n`),
        });
      },
    );

  // one chat listener, started and supervised by the server (runner/listeners/)
  server
    .command("listener <worker> <platform>", { hidden: true })
    .addOption(new Option("--internal").hideHelp())
    .action(async (worker: string, platform: string) => {
      const { PLATFORMS } = await import("../config/bot-bindings.ts");
      const match = PLATFORMS.find((name) => name === platform);
      if (!match)
        throw new RosterError(`unknown platform ${platform} (${PLATFORMS.join(", ")})`, {
          exitCode: 2,
        });
      const { serveListener } = await import("../listeners/child.ts");
      const { ADAPTERS } = await import("../listeners/adapters.ts");
      await serveListener(rosterPaths(), worker, match, ADAPTERS);
    });

  server
    .command("status")
    .description("is the server running, does its gateway answer, what is it doing")
    .option("--json", "the same as JSON")
    .action(async (flags: { json?: boolean }) => {
      const { formatStatus, serverStatus } = await import("../server/status.ts");
      const status = await serverStatus(rosterPaths());
      process.stdout.write(flags.json ? `${JSON.stringify(status)}\n` : formatStatus(status));
      if (!status.running) process.exitCode = 1;
    });
}
