/**
 * `roster gateway start | log`: declares the commands for the one door out of
 * every box — running it in the foreground (or as a run's or the server's
 * child) and reading what it decided.
 */
import { type Command, Option } from "commander";
import { rosterPaths } from "../config/paths.ts";
import { RosterError } from "../errors.ts";
import type { ListenAddress } from "../gateway/gateway.ts";
import { defaultListen, parseAddr } from "../gateway/listen.ts";

export function registerGatewayCommands(program: Command): void {
  const gateway = program.command("gateway").description("the one door out of every box");

  gateway
    .command("start")
    .description("run the gateway in the foreground")
    .option("--addr <host:port>", "address to listen on (repeatable)", parseAddr)
    // roster run's own gateway, a child of the run (runner/gateway/embedded.ts)
    .addOption(new Option("--embedded").hideHelp())
    // the server's gateway, its supervised child (runner/gateway/supervised.ts)
    .addOption(new Option("--for-server").hideHelp())
    .action(async (flags: { addr?: ListenAddress[]; embedded?: boolean; forServer?: boolean }) => {
      const paths = rosterPaths();
      if (flags.embedded) {
        if (!flags.addr) throw new RosterError("--embedded needs --addr", { exitCode: 2 });
        const { serveEmbedded } = await import("../gateway/embedded-child.ts");
        return serveEmbedded(paths, flags.addr, flags.forServer ? "server" : "run");
      }
      const listen = flags.addr ?? (await defaultListen(paths.config));
      const { Gateway } = await import("../gateway/gateway.ts");
      const { doorDir, STANDALONE_DOOR } = await import("../gateway/door.ts");
      const door = doorDir(paths.state, STANDALONE_DOOR);
      const running = await Gateway.start({ paths, listen, door });
      process.stdout.write(
        `gateway listening on ${running.addresses.map((a) => `${a.host}:${a.port}`).join(", ")}, boxes' door ${door} (config ${paths.config})\n`,
      );
      running.warm();
      await new Promise<void>((resolve) => {
        const stop = () => resolve();
        process.once("SIGINT", stop);
        process.once("SIGTERM", stop);
      });
      await running.stop();
      process.stdout.write("gateway stopped\n");
    });

  gateway
    .command("log")
    .description("what the gateway decided: which hosts a run reached and which it was refused")
    .option("--run <run>", "only this run (any unique prefix of its id)")
    .option("--denied", "only refusals")
    .option("--json", "one JSON decision per line")
    .action(async (flags: { run?: string; denied?: boolean; json?: boolean }) => {
      const { formatDecision, readDecisions, summarise } = await import("../gateway/audit-view.ts");
      const records = readDecisions(rosterPaths().audit, {
        ...(flags.run ? { run: flags.run } : {}),
        deniedOnly: flags.denied ?? false,
      });
      if (flags.json) {
        for (const record of records) process.stdout.write(`${JSON.stringify(record)}\n`);
        return;
      }
      if (records.length === 0) {
        process.stdout.write("no decisions recorded\n");
        return;
      }
      for (const record of records) process.stdout.write(`${formatDecision(record)}\n`);
      process.stdout.write(`\nhosts:\n${summarise(records).join("\n")}\n`);
    });
}
