import type { RosterPaths } from "../../ground/config/paths.ts";
import { errorMessage } from "../../ground/errors.ts";
import { describeExit, type EmbeddedGateway, launchEmbeddedGateway } from "./embedded.ts";
import type { ListenAddress } from "./gateway.ts";
import { askHealth } from "./health.ts";

/**
 * The server's gateway: a child process (embedded.ts, role "server") rather
 * than a part of the server's own event loop, so that nothing the server does
 * — a run's bookkeeping, a box flooding its output, a snapshot pass, a console
 * page — can delay another box's requests at the door. The server supervises
 * it: a child that dies, or stops answering /healthz, is started again in its
 * place on the addresses it had (its runs' doors are reopened, so running
 * boxes find it again), and one that can't be kept up ends the server, since
 * no box may run on without its door.
 */
export interface SupervisedGateway {
  /** Where it listens (port 0 asked: the port it got, kept across restarts). */
  addresses: ListenAddress[];
  port: number;
  /** The child's process id now (it changes when it is restarted). */
  pid(): number;
  /** Stops it for good (the server's last step); no restart follows. */
  stop(): Promise<void>;
}

/** Restarts allowed within RESTART_WINDOW_MS before the server gives up on its gateway. */
const MAX_RESTARTS = 5;
const RESTART_WINDOW_MS = 60_000;
/** The wait before a restart, doubled after each failed one (a port still held, a busy host). */
const FIRST_DELAY_MS = 200;
/**
 * How often the child is asked /healthz, and how many questions in a row it may
 * leave unanswered before it is killed and started again (about 10 s of silence).
 */
const HEALTH_EVERY_MS = 2_000;
const HEALTH_TIMEOUT_MS = 2_000;
const HEALTH_MISSES = 5;
/** A question asked this much later than planned: the server's own loop was held. */
const LATE_MS = 1_000;

export async function superviseGateway(options: {
  paths: RosterPaths;
  listen: ListenAddress[];
  env: NodeJS.ProcessEnv;
  note: (text: string) => void;
  /** The gateway can't be kept up: the server stops (with this reason). */
  onGiveUp: (reason: string) => void;
}): Promise<SupervisedGateway> {
  const { paths, env, note } = options;
  const launch = (listen: ListenAddress[]) =>
    launchEmbeddedGateway({ paths, listen, env, role: "server" });
  // the first start's failure is the server's own: it does not start without its door
  let child: EmbeddedGateway = await launch(options.listen);
  const addresses = child.addresses;
  const port = addresses[0]?.port ?? 0;
  let stopping = false;
  let restarting = false;
  /** The child killed for not answering (its death is not a crash of its own). */
  let unanswered: EmbeddedGateway | undefined;
  const restarts: number[] = [];

  const restart = async (why: string): Promise<void> => {
    restarting = true;
    let delay = FIRST_DELAY_MS;
    try {
      while (!stopping) {
        const now = Date.now();
        while (restarts.length && (restarts[0] ?? now) < now - RESTART_WINDOW_MS) restarts.shift();
        if (restarts.length >= MAX_RESTARTS) {
          options.onGiveUp(
            `the gateway died ${MAX_RESTARTS} times within ${RESTART_WINDOW_MS / 1000} s (last: ${why}); the server stops, and every box with it`,
          );
          return;
        }
        restarts.push(now);
        await new Promise((resolve) => setTimeout(resolve, delay));
        if (stopping) return;
        try {
          const next = await launch(addresses);
          if (stopping) {
            await next.stop();
            return;
          }
          child = next;
          watch(next);
          note(`gateway restarted (pid ${next.pid}) after ${why}`);
          return;
        } catch (error) {
          why = `a failed restart: ${errorMessage(error)}`;
          delay *= 2;
        }
      }
    } finally {
      restarting = false;
    }
  };
  const watch = (watched: EmbeddedGateway) =>
    watched.onExit((exit) => {
      if (stopping) return;
      const why =
        unanswered === watched ? "it stopped answering" : `it exited (${describeExit(exit)})`;
      note(`the gateway died: ${why}; starting it again`);
      void restart(why);
    });
  watch(child);

  // alive is not enough: a child whose loop is stuck holds every box's door shut
  let misses = 0;
  let asking = false;
  let due = Date.now() + HEALTH_EVERY_MS;
  const health = setInterval(() => {
    const late = Date.now() - due > LATE_MS;
    due = Date.now() + HEALTH_EVERY_MS;
    if (asking || stopping || restarting) return;
    // the answers may be waiting behind the server's own loop: no verdict from a held one
    if (late) {
      misses = 0;
      return;
    }
    asking = true;
    const asked = child;
    void askHealth(port, HEALTH_TIMEOUT_MS).then((answer) => {
      asking = false;
      if (asked !== child || stopping) return;
      misses = answer ? 0 : misses + 1;
      if (misses < HEALTH_MISSES) return;
      misses = 0;
      unanswered = asked;
      note(
        `the gateway (pid ${asked.pid}) did not answer /healthz ${HEALTH_MISSES} times in a row`,
      );
      asked.kill();
    });
  }, HEALTH_EVERY_MS);
  // the watch alone must not keep the server alive
  health.unref();

  return {
    addresses,
    port,
    pid: () => child.pid,
    stop: async () => {
      stopping = true;
      clearInterval(health);
      await child.stop();
    },
  };
}
