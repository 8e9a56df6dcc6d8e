import { controlKey } from "../../boundary/gateway/doors/control-key.ts";
import { closeRunDoor, openRunDoor } from "../../boundary/gateway/doors/door-client.ts";
import { describeExit, launchEmbeddedGateway } from "../../boundary/gateway/process/embedded.ts";
import { askHealth, ownGateway, runningGateway } from "../../boundary/gateway/process/health.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { errorMessage, RosterError } from "../../ground/errors.ts";

/**
 * The gateway a one-shot run holds for its duration: a running standalone one
 * when it answers, else one embedded for this run as a child process. Either
 * way the lease watches it, because a box must never run on without its door:
 * `lost` aborts, with the cause as its reason, the moment the embedded child
 * exits or the standalone one stops answering /healthz, and the run stops its
 * box on that signal.
 */
export interface GatewayLease {
  /** The port the gateway listens on (loopback). */
  port: number;
  /**
   * The folder of the gateway's own door, shared by every box it serves. A box
   * should be given its run's door instead (openDoor), which bounds what one box
   * can hold; this stays until every caller does.
   */
  door: string;
  /**
   * Opens a door for this run alone and resolves to the host folder to mount in
   * its box (at the same place as `door`). Ask once the run's token is minted:
   * the gateway opens doors only for runs with a live token.
   */
  openDoor(runId: string): Promise<string>;
  /** Closes the run's door when the run ends (its connections are cut, its folder removed). */
  closeDoor(runId: string): Promise<void>;
  /** Aborted (reason: an Error naming the cause) if the gateway goes away before release. */
  lost: AbortSignal;
  /** Stops watching; stops the embedded gateway (after the box, so never before it). */
  release(): Promise<void>;
}

/** How often a standalone gateway is asked whether it is still there. */
const HEALTH_EVERY_MS = 2_000;
const HEALTH_TIMEOUT_MS = 1_500;
/** Misses in a row before it counts as gone: one slow answer under load is not a death. */
const HEALTH_MISSES = 2;

export async function leaseGateway(options: {
  paths: RosterPaths;
  /** `[gateway] port`: where an embedded gateway listens. */
  port: number;
  env: NodeJS.ProcessEnv;
}): Promise<GatewayLease> {
  const { paths, port } = options;
  const lost = new AbortController();
  const running = await runningGateway(paths.state, paths.config);
  // the server's own gateway (its supervised child) is restarted in place if it dies, its
  // runs' doors reopened; a server that can't restart it stops, and every box with it
  if (running?.door && ownGateway(running))
    return {
      port: running.port,
      door: running.door,
      ...doorsOn(running.port, paths.identity),
      lost: lost.signal,
      release: async () => undefined,
    };
  if (running?.door) return watchStandalone(running.port, running.door, lost, paths.identity);

  let embedded: Awaited<ReturnType<typeof launchEmbeddedGateway>>;
  const launch = (on: number) =>
    launchEmbeddedGateway({ paths, listen: [{ host: "127.0.0.1", port: on }], env: options.env });
  try {
    embedded = await launch(port).catch(async (error: unknown) => {
      // another run's embedded gateway has the port (two runs started at once, no server):
      // this run's own gateway takes any free loopback port; boxes reach it by its door,
      // and only this process asks it anything on the port. Anything else on the port is
      // a misconfiguration the operator should hear about, not route around.
      if (!/EADDRINUSE/.test(errorMessage(error))) throw error;
      if (!(await askHealth(port, HEALTH_TIMEOUT_MS))) throw error;
      return launch(0);
    });
  } catch (error) {
    throw new RosterError(
      `the gateway is not healthy and could not be started on port ${port}: ${errorMessage(error)} (is another process using it? set [gateway] port)`,
      { exitCode: 2 },
    );
  }
  embedded.onExit((exit) => lost.abort(new Error(`the gateway died (${describeExit(exit)})`)));
  return {
    port: embedded.port,
    door: embedded.door,
    ...doorsOn(embedded.port, paths.identity),
    lost: lost.signal,
    release: () => embedded.stop(),
  };
}

function watchStandalone(
  port: number,
  door: string,
  lost: AbortController,
  identityDir: string,
): GatewayLease {
  let misses = 0;
  let asking = false;
  const timer = setInterval(() => {
    // a question still in flight is not asked twice
    if (asking || lost.signal.aborted) return;
    asking = true;
    void askHealth(port, HEALTH_TIMEOUT_MS).then((health) => {
      asking = false;
      misses = health ? 0 : misses + 1;
      if (misses >= HEALTH_MISSES && !lost.signal.aborted) {
        lost.abort(new Error(`the gateway on port ${port} stopped answering /healthz`));
      }
    });
  }, HEALTH_EVERY_MS);
  // the watch alone must not keep the process alive
  timer.unref();
  return {
    port,
    door,
    ...doorsOn(port, identityDir),
    lost: lost.signal,
    release: async () => clearInterval(timer),
  };
}

/** Run doors are asked for on the gateway's loopback port, whichever kind it is. */
function doorsOn(port: number, identityDir: string): Pick<GatewayLease, "openDoor" | "closeDoor"> {
  const key = () => controlKey(identityDir);
  return {
    openDoor: (runId) => openRunDoor(port, runId, key()),
    closeDoor: (runId) => closeRunDoor(port, runId, key()),
  };
}
