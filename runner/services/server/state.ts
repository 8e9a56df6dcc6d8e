import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { processAlive } from "../../ground/files/process-alive.ts";

/**
 * state/server.json: which server runs for this deployment (written by
 * `roster server start`, removed when it stops). Small on purpose: `roster run`
 * reads it to hand its run over, and must not load the server to do so.
 */
export interface ServerState {
  pid: number;
  started_at: string;
  cap: number;
  once: boolean;
  gateway: { port: number; addrs: string[] };
  /** The version and commit the server was started from (`roster -V`); absent from an older server. */
  version?: string;
}

/** Where a running server takes handed-over boxes (runner/services/server/run-socket.ts). */
export const runSocketPath = (paths: RosterPaths) => join(paths.state, "server.sock");

export function serverStateFile(paths: RosterPaths): string {
  return join(paths.state, "server.json");
}

/** Held (runner/ground/files/file-lock.ts) by the one server of this deployment, from before recovery to exit. */
export function serverLockFile(paths: RosterPaths): string {
  return join(paths.state, "server.lock");
}

export function readServerState(paths: RosterPaths): ServerState | undefined {
  try {
    const state = JSON.parse(readFileSync(serverStateFile(paths), "utf8")) as ServerState;
    return processAlive(state.pid) ? state : undefined;
  } catch {
    return undefined;
  }
}
