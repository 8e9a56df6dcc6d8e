import { type Command, Option } from "commander";
import { rosterPaths } from "../config/paths.ts";
import { errorMessage, RosterError } from "../errors.ts";
import { formatDecision, readDecisions, summarise } from "../gateway/audit-view.ts";
import { DEFAULT_GATEWAY_PORT } from "../gateway/defaults.ts";
import type { ListenAddress } from "../gateway/gateway.ts";

export function parseAddr(value: string, previous: ListenAddress[] = []): ListenAddress[] {
  const match = /^(\[[0-9a-fA-F:]+\]|[^:]+):(\d{1,5})$/.exec(value);
  const port = Number(match?.[2]);
  if (!match?.[1] || !(port >= 0 && port <= 65535)) {
    throw new RosterError(
      `--addr ${value}: expected HOST:PORT, e.g. 127.0.0.1:${DEFAULT_GATEWAY_PORT}`,
      {
        exitCode: 2,
      },
    );
  }
  return [...previous, { host: match[1].replace(/^\[|\]$/g, ""), port }];
}

/**
 * `[gateway] listen` when set; else loopback plus the locked network's bridge
 * address (where boxes reach the host), on `[gateway] port` (7300).
 */
async function defaultListen(configRoot: string): Promise<ListenAddress[]> {
  const { loadConfig } = await import("../config/load.ts");
  const section = loadConfig(configRoot).org.gateway ?? {};
  if (section.listen?.length) {
    return section.listen.reduce<ListenAddress[]>((all, entry) => parseAddr(entry, all), []);
  }
  const port = section.port ?? DEFAULT_GATEWAY_PORT;
  const listen: ListenAddress[] = [{ host: "127.0.0.1", port }];
  try {
    const { connectDocker } = await import("../box/docker.ts");
    const { ensureLockedNetwork } = await import("../box/network.ts");
    const { client } = await connectDocker();
    const network = await ensureLockedNetwork(client);
    listen.push({ host: network.gateway, port });
  } catch (error) {
    process.stderr.write(`roster: listening on loopback only (${errorMessage(error)})\n`);
  }
  return listen;
}

export function registerGatewayCommands(program: Command): void {
  const gateway = program.command("gateway").description("the one door out of every box");

  gateway
    .command("start")
    .description("run the gateway in the foreground")
    .option("--addr <host:port>", "address to listen on (repeatable)", parseAddr)
    // roster run's own gateway, a child of the run (runner/gateway/embedded.ts)
    .addOption(new Option("--embedded").hideHelp())
    .action(async (flags: { addr?: ListenAddress[]; embedded?: boolean }) => {
      const paths = rosterPaths();
      if (flags.embedded) {
        if (!flags.addr) throw new RosterError("--embedded needs --addr", { exitCode: 2 });
        const { serveEmbedded } = await import("../gateway/embedded.ts");
        return serveEmbedded(paths, flags.addr);
      }
      const listen = flags.addr ?? (await defaultListen(paths.config));
      const { Gateway } = await import("../gateway/gateway.ts");
      const running = await Gateway.start({ paths, listen });
      process.stdout.write(
        `gateway listening on ${running.addresses.map((a) => `${a.host}:${a.port}`).join(", ")} (config ${paths.config})\n`,
      );
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
    .action((flags: { run?: string; denied?: boolean; json?: boolean }) => {
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
