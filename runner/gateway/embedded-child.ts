import type { RosterPaths } from "../config/paths.ts";
import { errorMessage, RosterError } from "../errors.ts";
import { closeDoor, doorDir, embeddedDoor, sweepDoors } from "./door.ts";
import { type ChildMessage, STOP_GRACE_MS } from "./embedded.ts";
import { Gateway, type ListenAddress } from "./gateway.ts";

/**
 * The child's side: `roster gateway start --embedded`. Listens, says so over
 * IPC, and serves until the channel closes (or SIGTERM). It writes no
 * state/gateway.json: it belongs to one run and must not be found and used by
 * another.
 */
export async function serveEmbedded(paths: RosterPaths, listen: ListenAddress[]): Promise<void> {
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
  await sweepDoors(paths.state);
  const door = doorDir(paths.state, embeddedDoor(process.pid));
  let gateway: Gateway;
  try {
    // a door of its own, named for this process: concurrent runs never share one
    gateway = await Gateway.start({ paths, listen, recordState: false, door });
  } catch (error) {
    process.exitCode = 1;
    await closeDoor(door, true);
    // the parent closes the channel once it has the reason; then this exits
    send({ type: "failed", error: errorMessage(error) } satisfies ChildMessage);
    return;
  }
  const stopped = new Promise<void>((resolve) => {
    process.once("disconnect", resolve);
    process.once("SIGTERM", resolve);
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
  // this gateway's runs end with it: their doors go too
  await gateway.stop({ removeRunDoors: true }).catch(() => undefined);
  await closeDoor(door, true);
  process.exit(0);
}
