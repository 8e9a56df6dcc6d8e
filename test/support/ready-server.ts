/**
 * A deployment with a running `roster server` that keeps ready boxes
 * (docs/ready-boxes.md), against the scripted model: for the tests that hand
 * runs, commands and sessions to it. The server is roster's own; its stderr is
 * kept, and shown with any wait that times out.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { until } from "./chat-turns.ts";
import { ModelServer } from "./model-server.ts";
import { makeRosterRoot, type RosterRoot } from "./roster-root.ts";
import { stopProcess } from "./stop-process.ts";

export interface ReadyServer {
  model: ModelServer;
  deployment: RosterRoot;
  /** What the server said so far. */
  log(): string;
  /** Waits as `until` does; a timeout shows the server's log. */
  waitFor<T>(
    probe: () => T | undefined | false | Promise<T | undefined | false>,
    what: string,
    ms?: number,
  ): Promise<T>;
  /** Starts the server (after the test has shaped the deployment). */
  start(): Promise<void>;
  /** The server's process id. */
  pid(): number | undefined;
  /** Stops the server alone (SIGTERM), and waits until it has exited. */
  stopServer(): Promise<void>;
  /** Stops the server and the model, and removes the deployment. */
  stop(): Promise<void>;
}

export async function readyServer(options: {
  idleSecs?: number;
  cap?: number;
}): Promise<ReadyServer> {
  const model = await new ModelServer().start("127.0.0.1");
  const deployment = await makeRosterRoot(model.baseUrl("127.0.0.1"), {
    extraOrg: `[server]\nready_boxes = 1\nready_idle_secs = ${options.idleSecs ?? 600}\n`,
  });
  let server: ReturnType<RosterRoot["spawnRoster"]> | undefined;
  let log = "";
  const waitFor: ReadyServer["waitFor"] = (probe, what, ms = 90_000) =>
    until(probe, what, ms).catch((error: unknown) => {
      throw new Error(`${String(error)}\nserver log:\n${log}`);
    });
  return {
    model,
    deployment,
    log: () => log,
    waitFor,
    start: async () => {
      server = deployment.spawnRoster([
        "server",
        "start",
        "--no-listen",
        "--cap",
        String(options.cap ?? 4),
      ]);
      server.stderr.on("data", (chunk: Buffer) => {
        log += chunk.toString();
      });
      await waitFor(
        () => existsSync(join(deployment.paths.state, "server.sock")),
        "the server",
        30_000,
      );
    },
    pid: () => server?.pid,
    stopServer: () => stopProcess(server),
    stop: async () => {
      await stopProcess(server);
      await model.stop();
      await deployment.cleanup();
    },
  };
}

/** Whether the engine runs this container now (a name or id; false when there is none). */
export function boxRunning(container: string): boolean {
  try {
    return (
      execFileSync("docker", ["inspect", "-f", "{{.State.Running}}", container], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "ignore"],
      }).trim() === "true"
    );
  } catch {
    return false;
  }
}
