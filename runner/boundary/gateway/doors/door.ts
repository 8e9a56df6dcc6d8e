import { chmod, mkdir, readdir, rm, rmdir } from "node:fs/promises";
import { connect, type Server } from "node:net";
import { basename, dirname, join } from "node:path";
import { processAlive } from "../../../ground/files/process-alive.ts";

/**
 * The gateway's door: the only way out of a box. A box has no network; the
 * gateway listens on a Unix socket in a folder of its own, which the runner
 * mounts read-only into each box it serves (box/roster-door opens it on the
 * box's loopback). A folder rather than the socket itself is mounted, so a
 * gateway restarted in place is found by the boxes already running.
 *
 * Anyone who can open the socket reaches only what a box reaches: the proxy,
 * which refuses everything without a run's token.
 *
 * Each run has a door of its own beside the gateway's (run-doors.ts), in the
 * folder runDoorDir names: the gateway then knows which box a connection comes
 * from before it reads a byte, and bounds what one box may hold.
 */
export function doorDir(stateRoot: string, owner: string): string {
  return join(stateRoot, "doors", owner);
}

/**
 * The socket's name inside a door's folder. box/roster-door opens it by this
 * name too, so the two change together (box/layout.ts hands it on to the box side).
 */
export const DOOR_SOCKET = "gateway.sock";

/** The door of a standalone gateway (`roster gateway start`, the server). */
export const STANDALONE_DOOR = "gateway";

/** The door of the gateway a run embeds (a process of its own). */
export function embeddedDoor(pid: number): string {
  return `run-${pid}`;
}

/**
 * The folder of one run's own door, beside its gateway's (`<owner>@<run id>`):
 * never inside it, so a box given the gateway's folder can't see other boxes' doors.
 */
export function runDoorDir(ownerDir: string, runId: string): string {
  return `${ownerDir}@${runId}`;
}

/** The run doors a gateway (by its folder) has left in place: run id → folder. */
export async function runDoorsOf(ownerDir: string): Promise<Map<string, string>> {
  const prefix = `${basename(ownerDir)}@`;
  const entries = await readdir(dirname(ownerDir)).catch(() => []);
  const doors = new Map<string, string>();
  for (const entry of entries) {
    if (entry.startsWith(prefix))
      doors.set(entry.slice(prefix.length), join(dirname(ownerDir), entry));
  }
  return doors;
}

/**
 * Removes the doors of embedded gateways whose process is gone, run doors
 * included (a run killed with SIGKILL leaves its door behind; its box was
 * reaped the same way).
 */
export async function sweepDoors(stateRoot: string): Promise<void> {
  const entries = await readdir(join(stateRoot, "doors")).catch(() => []);
  for (const entry of entries) {
    const pid = Number(/^run-(\d+)(@.+)?$/.exec(entry)?.[1]);
    if (!pid || pid === process.pid || processAlive(pid)) continue;
    await closeDoor(doorDir(stateRoot, entry), true);
  }
}

/** Linux's limit on a Unix socket's path (sun_path), less its terminating NUL. */
const MAX_SOCKET_PATH = 107;

/** Makes the folder, claims the socket (a stale one is removed) and listens on it. */
export async function openDoor(server: Server, dir: string): Promise<string> {
  const path = join(dir, DOOR_SOCKET);
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH) {
    throw new Error(
      `the gateway's door ${path} is longer than a Unix socket path may be (${MAX_SOCKET_PATH} bytes): use a shorter ROSTER_ROOT`,
    );
  }
  await mkdir(dir, { recursive: true, mode: 0o755 });
  // the box's user must be able to enter the folder whatever the umask was
  await chmod(dir, 0o755);
  // the doors' own folder can be passed through, not listed: a run door is named after its run
  if (basename(dirname(dir)) === "doors") await chmod(dirname(dir), 0o711);
  if (await answers(path)) {
    throw new Error(`another gateway already listens at ${path}`);
  }
  await rm(path, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ path, backlog: 4096 }, () => {
      server.off("error", reject);
      resolve();
    });
  });
  // the box's user is not the host's: it needs write access to connect
  await chmod(path, 0o666);
  return path;
}

/**
 * Removes the socket. The folder stays unless `removeFolder`: running boxes
 * have it mounted, and a gateway restarted in place must be the one they see.
 */
export async function closeDoor(dir: string, removeFolder = false): Promise<void> {
  await rm(join(dir, DOOR_SOCKET), { force: true });
  if (removeFolder) await rmdir(dir).catch(() => undefined);
}

/** Does something listen on this socket? (A leftover file from a crash does not.) */
export function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ path });
    const settle = (alive: boolean) => {
      socket.destroy();
      resolve(alive);
    };
    socket.once("connect", () => settle(true));
    socket.once("error", () => settle(false));
    socket.setTimeout(1000, () => settle(false));
  });
}
