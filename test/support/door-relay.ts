import { mkdtemp, rm } from "node:fs/promises";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DOOR_PORT } from "../../runner/boundary/box/layout.ts";
import { openDoor } from "../../runner/boundary/gateway/doors/door.ts";

/**
 * A door that leads straight to one TCP service on the host, with no gateway
 * behind it: for tests of the box itself (the engine, its tools) that talk to
 * a test service directly. Inside the box the service is at `origin`. Bytes
 * are piped both ways; either side ending ends the other.
 */
export interface DoorRelay {
  dir: string;
  /** The service's address as a box sees it (its loopback, through roster-door). */
  origin: string;
  close(): Promise<void>;
}

export async function relayDoor(port: number, host = "127.0.0.1"): Promise<DoorRelay> {
  const dir = await mkdtemp(join(tmpdir(), "roster-door-"));
  const server = createServer((inbound) => {
    const outbound = connect({ host, port });
    inbound.pipe(outbound);
    outbound.pipe(inbound);
    inbound.on("error", () => outbound.destroy());
    outbound.on("error", () => inbound.destroy());
    inbound.on("close", () => outbound.destroy());
    outbound.on("close", () => inbound.destroy());
  });
  await openDoor(server, dir);
  return {
    dir,
    origin: `http://127.0.0.1:${DOOR_PORT}`,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
