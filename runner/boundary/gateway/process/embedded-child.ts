import type { RosterPaths } from "../../../ground/config/paths.ts";
import { errorMessage, RosterError } from "../../../ground/errors.ts";
import { closeDoor, doorDir, embeddedDoor, STANDALONE_DOOR, sweepDoors } from "../doors/door.ts";
import type { ActionHostFactory } from "../exchange/action-host.ts";
import { type ChildMessage, type GatewayRole, STOP_GRACE_MS } from "./embedded.ts";
import { Gateway, type ListenAddress } from "./gateway.ts";

/**
 * The child's side: `roster gateway start --embedded`. Listens, says so over
 * IPC, and serves until the channel closes (or SIGTERM). A run's writes no
 * state/gateway.json: it belongs to one run and must not be found and used by
 * another. The server's (`--for-server`) is the deployment's gateway: it
 * writes state/gateway.json naming the server as its supervisor, serves the
 * standalone door, and ends only when the server closes the channel (the
 * server stops it last, after every box; a SIGTERM to the whole group must
 * not take the door from boxes still being stopped).
 */
export async function serveEmbedded(
  paths: RosterPaths,
  listen: ListenAddress[],
  actions: ActionHostFactory,
  role: GatewayRole = "run",
): Promise<void> {
  const send = process.send?.bind(process);
  if (!send) {
    throw new RosterError(
      "--embedded is roster run's own: it needs the IPC channel of its parent",
      {
        exitCode: 2,
      },
    );
  }
  // Ctrl-C reaches the whole foreground process group; the parent answers it by
  // stopping its box first and then this gateway, so the box is never left
  // without its door while it still runs.
  process.on("SIGINT", () => undefined);
  const forServer = role === "server";
  if (forServer) process.on("SIGTERM", () => undefined);
  await sweepDoors(paths.state);
  // a run's: a door of its own, named for this process, so concurrent runs never share one
  const door = doorDir(paths.state, forServer ? STANDALONE_DOOR : embeddedDoor(process.pid));
  let gateway: Gateway;
  try {
    gateway = await Gateway.start({
      paths,
      listen,
      door,
      actions,
      recordState: forServer,
      takenBy: forServer ? "server" : "run",
      // a run's gateway serves one run: one process is its door
      ...(forServer ? {} : { shards: 0 }),
      ...(forServer ? { supervisor: process.ppid } : {}),
    });
  } catch (error) {
    process.exitCode = 1;
    // the standalone folder stays: running boxes have it mounted
    await closeDoor(door, !forServer);
    // the parent closes the channel once it has the reason; then this exits
    send({ type: "failed", error: errorMessage(error) } satisfies ChildMessage);
    return;
  }
  const stopped = new Promise<void>((resolve) => {
    process.once("disconnect", resolve);
    if (!forServer) process.once("SIGTERM", resolve);
  });
  send({
    type: "ready",
    addresses: gateway.addresses,
    door,
    configRoot: paths.config,
  } satisfies ChildMessage);
  gateway.warm();
  await stopped;
  // Exit even if a stray socket would keep the loop alive: when the parent is
  // gone, nobody else would ever end this process.
  setTimeout(() => process.exit(0), STOP_GRACE_MS).unref();
  // a run's gateway's runs end with it: their doors go too. The server's leave theirs
  // for the gateway restarted in its place (run-doors.ts reopens them)
  await gateway.stop({ removeRunDoors: !forServer }).catch(() => undefined);
  await closeDoor(door, !forServer);
  process.exit(0);
}
