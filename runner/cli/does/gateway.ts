/**
 * What `roster gateway start | log` do: run the gateway in the foreground (or
 * as the child of a run or of the server), and print what it decided. The CLI
 * only declares these commands; this module is loaded when one runs.
 */

import type { ActionHostFactory } from "../../boundary/gateway/exchange/action-host.ts";
import type { ListenAddress } from "../../boundary/gateway/process/gateway.ts";
import { defaultListen } from "../../boundary/gateway/process/listen.ts";
import { rosterPaths } from "../../ground/config/paths.ts";
import { workerSubject } from "../../ground/config/subject.ts";
import { RosterError } from "../../ground/errors.ts";

export interface GatewayStartFlags {
  addr?: ListenAddress[];
  embedded?: boolean;
  forServer?: boolean;
  shard?: boolean;
}

/**
 * `roster gateway start`: until SIGINT or SIGTERM, then a clean stop. The
 * action host comes from the caller (the CLI wires it in).
 */
export async function startGatewayCommand(
  flags: GatewayStartFlags,
  actions: ActionHostFactory,
): Promise<void> {
  const paths = rosterPaths();
  if (flags.shard) {
    const shard = await import("../../boundary/gateway/process/shard.ts");
    return shard.serveShard(shard.shardStartFrom(process.env));
  }
  if (flags.embedded) {
    if (!flags.addr) throw new RosterError("--embedded needs --addr", { exitCode: 2 });
    const { serveEmbedded } = await import("../../boundary/gateway/process/embedded-child.ts");
    return serveEmbedded(paths, flags.addr, actions, flags.forServer ? "server" : "run");
  }
  const listen = flags.addr ?? (await defaultListen(paths.config));
  const { Gateway } = await import("../../boundary/gateway/process/gateway.ts");
  const { doorDir, STANDALONE_DOOR } = await import("../../boundary/gateway/doors/door.ts");
  const door = doorDir(paths.state, STANDALONE_DOOR);
  const running = await Gateway.start({ paths, listen, door, actions });
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
}

/** `roster gateway log`: which hosts runs reached and which they were refused. */
export async function gatewayLogCommand(flags: {
  run?: string;
  worker?: string;
  denied?: boolean;
  suggest?: boolean;
  json?: boolean;
}): Promise<void> {
  if (flags.suggest) return (await import("./gateway-suggest.ts")).suggestCommand(flags);
  const subject = flags.worker ? workerSubject(flags.worker) : undefined;
  const { eachDecision, formatDecision, HostTally } = await import(
    "../../boundary/gateway/audit/view.ts"
  );
  // written as read: the log may hold more decisions than fit in memory
  const tally = new HostTally();
  eachDecision(
    rosterPaths().audit,
    { ...(flags.run ? { run: flags.run } : {}), deniedOnly: flags.denied ?? false },
    (record) => {
      if (subject && record.subject !== subject) return;
      if (flags.json) {
        process.stdout.write(`${JSON.stringify(record)}\n`);
        return;
      }
      tally.add(record);
      process.stdout.write(`${formatDecision(record)}\n`);
    },
  );
  if (flags.json) return;
  if (tally.size === 0) {
    process.stdout.write("no decisions recorded\n");
    return;
  }
  process.stdout.write(`\nhosts:\n${tally.lines().join("\n")}\n`);
}
