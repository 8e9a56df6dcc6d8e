import { createServer, type Server, type Socket } from "node:net";
import { closeDoor, openDoor, runDoorDir, runDoorsOf } from "./door.ts";
import { type Identity, liveRuns } from "./identity.ts";

/**
 * One door per box. The runner, once it has minted a run's token, asks its
 * gateway (on loopback) to open a door for that run; the gateway listens on a
 * socket in a folder of that run's own, which is what the box gets mounted.
 * A connection's box is then known before it says anything, so one box can't
 * take the gateway from the others: each door holds at most DOOR_CONNECTION_CAP
 * connections, and any more are closed at once (the first time a box reaches
 * its cap is audited, once per run, not once per connection).
 *
 * A door is opened only for a run whose token is live, and closed when the run
 * ends, or found on the next sweep once its token is revoked. A gateway
 * restarted in place reopens the doors of live runs in the same folders, so
 * running boxes find them again.
 */
export const DOOR_CONNECTION_CAP = 256;

/** The rule an audit line names when a box reaches its door's cap (a stable name). */
export const DOOR_CAP_RULE = "door-cap";

/** How often doors whose run's token is gone are closed (a runner that died without closing). */
const SWEEP_EVERY_MS = 30_000;

/** A run id as a folder name: no separators, no dot first, short enough for a socket path. */
const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** A refusal to open or close a door, with the HTTP status its route answers. */
export class DoorError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface RunDoor {
  runId: string;
  subject: string;
  /** The run as its token says it (subject, run id, origins): every request at this door is its. */
  identity: Identity;
  dir: string;
}

interface OpenDoor extends RunDoor {
  server: Server;
  sockets: Set<Socket>;
  capped: boolean;
}

export interface RunDoorsOptions {
  /** The gateway's own door folder: run doors are named after it (door.ts runDoorDir). */
  ownerDir: string;
  identityDir: string;
  /** Hands an admitted connection to the proxy. */
  accept(socket: Socket, door: RunDoor): void;
  /** Called once per run, the first time its box reaches the cap. */
  onCap(door: RunDoor, cap: number): void;
  cap?: number;
}

export class RunDoors {
  private readonly doors = new Map<string, OpenDoor>();
  private readonly pending = new Map<string, Promise<string>>();
  private readonly cap: number;
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly options: RunDoorsOptions) {
    this.cap = options.cap ?? DOOR_CONNECTION_CAP;
    this.sweeper = setInterval(() => void this.sweep(), SWEEP_EVERY_MS);
    this.sweeper.unref();
  }

  /** Opens (or finds open) the door of a run whose token is live; resolves to its folder. */
  open(runId: string): Promise<string> {
    if (!RUN_ID.test(runId)) {
      return Promise.reject(
        new DoorError(400, `run id ${JSON.stringify(runId)} is not one a door can be named after`),
      );
    }
    const open = this.doors.get(runId);
    if (open) return Promise.resolve(open.dir);
    const identity = liveRuns(this.options.identityDir).get(runId);
    if (!identity) {
      return Promise.reject(
        new DoorError(404, `run ${runId} has no live token: mint it before opening the run's door`),
      );
    }
    // two asks at once open one door
    let opening = this.pending.get(runId);
    if (!opening) {
      opening = this.listen(runId, identity).finally(() => this.pending.delete(runId));
      this.pending.set(runId, opening);
    }
    return opening;
  }

  /** Closes a run's door: its connections are cut, its socket and folder removed. */
  async close(runId: string): Promise<void> {
    await this.pending.get(runId)?.catch(() => undefined);
    const door = this.doors.get(runId);
    this.doors.delete(runId);
    if (door) await shut(door);
    if (RUN_ID.test(runId)) await closeDoor(runDoorDir(this.options.ownerDir, runId), true);
  }

  /** At start: reopens the doors of live runs this gateway left, removes the rest. */
  async reopen(): Promise<void> {
    const live = liveRuns(this.options.identityDir);
    for (const [runId, dir] of await runDoorsOf(this.options.ownerDir)) {
      if (live.has(runId) && RUN_ID.test(runId)) await this.open(runId);
      else await closeDoor(dir, true);
    }
  }

  /**
   * Stops listening on every door. The folders stay unless `removeFolders`:
   * running boxes have them mounted, and a gateway restarted in place reopens them.
   */
  async closeAll(removeFolders: boolean): Promise<void> {
    clearInterval(this.sweeper);
    await Promise.allSettled([...this.pending.values()]);
    const doors = [...this.doors.values()];
    this.doors.clear();
    for (const door of doors) {
      await shut(door);
      await closeDoor(door.dir, removeFolders);
    }
  }

  /** Open connections at a run's door (0 when it is not open). */
  connections(runId: string): number {
    return this.doors.get(runId)?.sockets.size ?? 0;
  }

  private async listen(runId: string, identity: Identity): Promise<string> {
    const dir = runDoorDir(this.options.ownerDir, runId);
    const door: OpenDoor = {
      runId,
      subject: identity.subject,
      identity: {
        subject: identity.subject,
        runId,
        ...(identity.origins ? { origins: identity.origins } : {}),
      },
      dir,
      server: createServer({ allowHalfOpen: true }),
      sockets: new Set(),
      capped: false,
    };
    door.server.on("connection", (socket) => this.admit(door, socket));
    // a door that can't be opened (path too long, taken) is the caller's error to report
    await openDoor(door.server, dir);
    this.doors.set(runId, door);
    return dir;
  }

  private admit(door: OpenDoor, socket: Socket): void {
    if (door.sockets.size >= this.cap) {
      // closed before a byte is read: the box holds no more of the gateway than its cap
      socket.destroy();
      if (!door.capped) {
        door.capped = true;
        this.options.onCap(door, this.cap);
      }
      return;
    }
    door.sockets.add(socket);
    socket.once("close", () => door.sockets.delete(socket));
    this.options.accept(socket, door);
  }

  private async sweep(): Promise<void> {
    if (this.doors.size === 0) return;
    const live = liveRuns(this.options.identityDir);
    for (const runId of [...this.doors.keys()]) {
      if (!live.has(runId)) await this.close(runId).catch(() => undefined);
    }
  }
}

async function shut(door: OpenDoor): Promise<void> {
  const closed = new Promise<void>((resolve) => door.server.close(() => resolve()));
  for (const socket of door.sockets) socket.destroy();
  await closed;
}
