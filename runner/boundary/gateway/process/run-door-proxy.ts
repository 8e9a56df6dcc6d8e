import type { Server } from "node:http";
import { DOOR_CAP_RULE, RunDoors } from "../doors/run-doors.ts";
import { requestFacts } from "../exchange/admission.ts";
import { arrivedAtDoor } from "../exchange/caller.ts";
import type { ServerDeps } from "../exchange/server.ts";

/**
 * The run doors, served by a proxy of their own: a connection is handed to it
 * once its door has admitted it, and a box reaching its cap is audited once.
 */
export function openRunDoors(
  deps: ServerDeps,
  outer: Server,
  ownerDir: string,
  identityDir: string,
): RunDoors {
  return new RunDoors({
    ownerDir,
    identityDir,
    accept: (socket, door) => {
      // the run is the door the bytes came through (caller.ts), known before a byte is read
      arrivedAtDoor(socket, door.identity);
      outer.emit("connection", socket);
    },
    onCap: (door, cap) =>
      deps.audit.record(
        requestFacts({
          target: { protocol: "http", host: "door", port: 0 },
          method: "OPEN",
          rawPath: "/",
          headers: {},
          identity: door.identity,
          bodySize: 0,
        }),
        {
          verdict: "deny",
          rule: DOOR_CAP_RULE,
          status: 503,
          note: `the box holds ${cap} connections to its door, the most one box may: further ones are closed at once (written once per run)`,
        },
      ),
  });
}
