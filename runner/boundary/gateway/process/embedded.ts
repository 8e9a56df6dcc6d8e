import { type ChildProcess, fork } from "node:child_process";
import type { RosterPaths } from "../../../ground/config/paths.ts";
// types only: the run's side must not load the gateway itself (TLS, executors, chat clients)
import { GATEWAY_NODE_FLAGS } from "../settings/defaults.ts";
import type { ListenAddress } from "./gateway.ts";
import { deferCaCerts, ROSTER_BIN } from "./roster-child.ts";

/**
 * The gateway `roster run` embeds when no standalone one is running, as a
 * child process (`roster gateway start --embedded`) rather than inside the
 * run's own process: a gateway crash then cannot take the run's bookkeeping
 * down with it, and the run can see the gateway die and stop its box at once.
 * The server's gateway is one too (role "server", supervised.ts): the door's
 * data plane then has an event loop of its own, which nothing the server does
 * (a run's bookkeeping, a flood of output, a snapshot pass) can keep busy.
 *
 * This is the parent's half (embedded-child.ts is the child's). Over the fork's IPC channel the child
 * sends exactly one message, ready (with its bound addresses) or failed (with
 * the reason); it stops when the channel closes, which happens when the parent
 * disconnects it or exits in any way, so it never outlives its run.
 */
export type GatewayRole = "run" | "server";

export type ChildMessage =
  | { type: "ready"; addresses: ListenAddress[]; door: string; configRoot: string }
  | { type: "failed"; error: string };

/** How the child ended: the exit code, or the signal that killed it. */
export interface GatewayExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export function describeExit(exit: GatewayExit): string {
  return exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code ?? "unknown"}`;
}

export interface EmbeddedGateway {
  pid: number;
  port: number;
  addresses: ListenAddress[];
  /** The folder of its door, mounted into the run's box. */
  door: string;
  /** Called once when the child ends for any reason other than stop(). */
  onExit(listener: (exit: GatewayExit) => void): void;
  /** Asks the child to stop (closing the channel), then kills it if it lingers. */
  stop(): Promise<void>;
  /**
   * Kills the child at once, as a death its onExit listeners hear of: a
   * supervisor's answer to a gateway that is alive but no longer answers.
   */
  kill(): void;
}

const READY_TIMEOUT_MS = 60_000;
export const STOP_GRACE_MS = 5_000;

/**
 * Starts the child and waits for it to listen. Rejects with the child's own
 * reason (e.g. EADDRINUSE) when it can't. The child finds the roots from `env`
 * the way every roster command does; it reports its config root so a run whose
 * `paths` disagree with its environment is refused rather than half-governed.
 */
export async function launchEmbeddedGateway(options: {
  paths: RosterPaths;
  listen: ListenAddress[];
  env: NodeJS.ProcessEnv;
  /**
   * "run" (the default): one run's own gateway, with a door of its own, found by
   * no one else. "server": the server's gateway, on the standalone door and in
   * state/gateway.json, its runs' doors left for the one restarted in its place.
   */
  role?: GatewayRole;
}): Promise<EmbeddedGateway> {
  const args = ["gateway", "start", "--embedded"];
  if (options.role === "server") args.push("--for-server");
  for (const address of options.listen) args.push("--addr", formatAddr(address));
  // stdout is ignored so nothing the child prints can mix with the run's answer;
  // stderr is inherited so a gateway bug still shows its stack. execArgv is
  // the gateway's own (not the parent's: bin/roster.mjs picks the compiled runner
  // or TypeScript itself).
  const child = fork(ROSTER_BIN, args, {
    env: deferCaCerts(options.env),
    execArgv: GATEWAY_NODE_FLAGS,
    stdio: ["ignore", "ignore", "inherit", "ipc"],
  });
  // a failed kill or send is reported as 'error'; the exit watch covers what matters
  child.on("error", () => undefined);
  const exited = new Promise<GatewayExit>((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
  });

  let ready: Extract<ChildMessage, { type: "ready" }>;
  try {
    ready = await waitForReady(child, exited);
    if (ready.configRoot !== options.paths.config) {
      throw new Error(
        `it serves ${ready.configRoot}, not ${options.paths.config} (the environment names other roots)`,
      );
    }
  } catch (error) {
    await stopChild(child, exited);
    throw error;
  }

  let stopping = false;
  const listeners: ((exit: GatewayExit) => void)[] = [];
  void exited.then((exit) => {
    if (stopping) return;
    for (const listener of listeners) listener(exit);
  });
  return {
    pid: child.pid ?? 0,
    port: ready.addresses[0]?.port ?? 0,
    addresses: ready.addresses,
    door: ready.door,
    onExit: (listener) => {
      listeners.push(listener);
    },
    stop: async () => {
      stopping = true;
      await stopChild(child, exited);
    },
    kill: () => {
      child.kill("SIGKILL");
    },
  };
}

function waitForReady(
  child: ChildProcess,
  exited: Promise<GatewayExit>,
): Promise<Extract<ChildMessage, { type: "ready" }>> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: ChildMessage) => {
      done();
      if (message.type === "ready") resolve(message);
      else reject(new Error(message.error));
    };
    const onError = (error: Error) => {
      done();
      reject(error);
    };
    const timer = setTimeout(
      () => onError(new Error(`it did not report ready within ${READY_TIMEOUT_MS / 1000} s`)),
      READY_TIMEOUT_MS,
    );
    // the first of message, error, exit or timeout settles it; the rest are no-ops
    const done = () => {
      clearTimeout(timer);
      child.off("message", onMessage);
      child.off("error", onError);
    };
    child.on("message", onMessage);
    child.on("error", onError);
    void exited.then((exit) =>
      onError(new Error(`it exited (${describeExit(exit)}) before it was ready`)),
    );
  });
}

async function stopChild(child: ChildProcess, exited: Promise<GatewayExit>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  if (child.connected) child.disconnect();
  else child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
  await exited;
  clearTimeout(timer);
}

function formatAddr(address: ListenAddress): string {
  return address.host.includes(":")
    ? `[${address.host}]:${address.port}`
    : `${address.host}:${address.port}`;
}
