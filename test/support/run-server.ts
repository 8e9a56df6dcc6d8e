import { existsSync } from "node:fs";
import { join } from "node:path";
import { until } from "./chat-turns.ts";
import type { RosterRoot } from "./roster-root.ts";
import { endOfLog, stopProcess } from "./stop-process.ts";

/**
 * `roster server start` on a test deployment, with no chat listener and no
 * console, once it takes runs (its socket is there and its gateway is up);
 * its stderr kept for a failing test to show.
 */
export interface RunServer {
  child: ReturnType<RosterRoot["spawnRoster"]>;
  log(): string;
  /** SIGTERM, then its exit (a server already gone is let be). */
  stop(): Promise<void>;
}

export async function startRunServer(deployment: RosterRoot): Promise<RunServer> {
  let log = "";
  const child = deployment.spawnRoster(["server", "start", "--no-listen", "--no-console"]);
  child.stderr.on("data", (chunk: Buffer) => {
    log += chunk.toString();
  });
  await until(
    () => existsSync(join(deployment.paths.state, "server.sock")) && /gateway on/.test(log),
    "the server to take runs",
    60_000,
  );
  return {
    child,
    log: () => log,
    stop: () => stopProcess(child, { detail: () => endOfLog(log) }),
  };
}
