/**
 * What `roster server start | status` and the hidden `server listener` do: run
 * the daemon in the foreground, report on it, and serve one chat listener as
 * its supervised child. The CLI only declares these commands; this module is
 * loaded when one runs.
 */

import type { ListenAddress } from "../../boundary/gateway/process/gateway.ts";
import { rosterPaths } from "../../ground/config/paths.ts";
import { RosterError } from "../../ground/errors.ts";

export interface ServerStartFlags {
  cap: number;
  once?: boolean;
  listen: boolean;
  console: boolean;
  addr?: ListenAddress[];
}

/** `roster server start`: until SIGTERM or Ctrl-C, or with --once until the due tasks are done. */
export async function startServerCommand(flags: ServerStartFlags): Promise<void> {
  const { startServer } = await import("../../services/server/daemon.ts");
  process.exitCode = await startServer({
    paths: rosterPaths(),
    cap: flags.cap,
    once: flags.once ?? false,
    noListen: !flags.listen,
    noConsole: !flags.console,
    ...(flags.addr ? { listen: flags.addr } : {}),
    note: (text) => process.stderr.write(`roster: ${text}\n`),
  });
}

/** `roster server listener`: one chat listener, started and supervised by the server. */
export async function listenerCommand(worker: string, platform: string): Promise<void> {
  const { botPlatforms } = await import("../../ground/config/bot-bindings.ts");
  const match = botPlatforms().find((name) => name === platform);
  if (!match)
    throw new RosterError(`unknown platform ${platform} (${botPlatforms().join(", ")})`, {
      exitCode: 2,
    });
  const { serveListener } = await import("../../services/listeners/child.ts");
  const { listenerPlatform } = await import("../../services/chat/platforms.ts");
  const listener = listenerPlatform(match)?.listener;
  if (!listener) throw new RosterError(`platform ${match} has no listener`, { exitCode: 2 });
  await serveListener(rosterPaths(), worker, match, await listener());
}

/** `roster server status`: exit 1 when no server runs. */
export async function serverStatusCommand(flags: { json?: boolean }): Promise<void> {
  const { formatStatus, serverStatus } = await import("../../services/server/status.ts");
  const status = await serverStatus(rosterPaths());
  process.stdout.write(flags.json ? `${JSON.stringify(status)}\n` : formatStatus(status));
  if (!status.running) process.exitCode = 1;
}
