/**
 * `roster gateway start | log`: declares the commands for the one door out of
 * every box — running it in the foreground (or as a run's or the server's
 * child) and reading what it decided.
 */
import { type Command, Option } from "commander";
import { parseAddr } from "../../boundary/gateway/process/listen.ts";
import type { GatewayStartFlags } from "../does/gateway.ts";

// Implementations load when a command runs, so `roster --help` stays instant.
const doesGateway = () => import("../does/gateway.ts");
// the gateway's action host, wired in here rather than built by the gateway itself
const actionHost = async () => (await import("../../services/actions/lazy-host.ts")).lazyActionHost;

export function registerGatewayCommands(program: Command): void {
  const gateway = program.command("gateway").description("the one door out of every box");

  gateway
    .command("start")
    .description("run the gateway in the foreground")
    .option("--addr <host:port>", "address to listen on (repeatable)", parseAddr)
    // roster run's own gateway, a child of the run (runner/boundary/gateway/process/embedded.ts)
    .addOption(new Option("--embedded").hideHelp())
    // the server's gateway, its supervised child (runner/boundary/gateway/process/supervised.ts)
    .addOption(new Option("--for-server").hideHelp())
    // one of the gateway's shards, its child (runner/boundary/gateway/process/shards.ts)
    .addOption(new Option("--shard").hideHelp())
    .action(async (flags: GatewayStartFlags) =>
      (await doesGateway()).startGatewayCommand(flags, await actionHost()),
    );

  gateway
    .command("log")
    .description("what the gateway decided: which hosts a run reached and which it was refused")
    .option("--run <run>", "only this run (any unique prefix of its id)")
    .option("--worker <worker>", "only this worker's")
    .option("--denied", "only refusals")
    .option(
      "--suggest",
      "for each worker and host the grants refused, the narrowest grant or connection that admits those requests, checked by the door's own ruling (implies --denied)",
    )
    .option("--json", "one JSON decision per line (with --suggest: one suggestion per line)")
    .action(
      async (flags: {
        run?: string;
        worker?: string;
        denied?: boolean;
        suggest?: boolean;
        json?: boolean;
      }) => (await doesGateway()).gatewayLogCommand(flags),
    );
}
