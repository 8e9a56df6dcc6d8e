import type { RosterPaths } from "../../../ground/config/paths.ts";
import { errorMessage } from "../../../ground/errors.ts";
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

interface SuperviseOptions {
  paths: RosterPaths;
  listen: ListenAddress[];
  env: NodeJS.ProcessEnv;
  note: (text: string) => void;
  /** The gateway can't be kept up: the server stops (with this reason). */
  onGiveUp: (reason: string) => void;
}

export async function superviseGateway(options: SuperviseOptions): Promise<SupervisedGateway> {
  // the first start's failure is the server's own: it does not start without its door
  const first = await launchServerGateway(options, options.listen);
  const supervisor = new Supervisor(options, first);
  return {
    addresses: supervisor.addresses,
    port: supervisor.port,
    pid: () => supervisor.child.pid,
    stop: () => supervisor.stop(),
  };
}

function launchServerGateway(
  options: SuperviseOptions,
  listen: ListenAddress[],
): Promise<EmbeddedGateway> {
  return launchEmbeddedGateway({ paths: options.paths, listen, env: options.env, role: "server" });
}

/** One gateway child at a time: restarted when it dies or stops answering. */
class Supervisor {
  readonly addresses: ListenAddress[];
  readonly port: number;
  private stopping = false;
  private restarting = false;
  /** The child killed for not answering (its death is not a crash of its own). */
  private unanswered: EmbeddedGateway | undefined;
  /** When each recent restart happened, for the give-up rule. */
  private readonly restarts: number[] = [];
  private misses = 0;
  private asking = false;
  private due = Date.now() + HEALTH_EVERY_MS;
  private readonly health: NodeJS.Timeout;

  constructor(
    private readonly options: SuperviseOptions,
    public child: EmbeddedGateway,
  ) {
    this.addresses = child.addresses;
    this.port = this.addresses[0]?.port ?? 0;
    this.watch(child);
    // alive is not enough: a child whose loop is stuck holds every box's door shut
    this.health = setInterval(() => this.checkHealth(), HEALTH_EVERY_MS);
    // the watch alone must not keep the server alive
    this.health.unref();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.health);
    await this.child.stop();
  }

  private watch(watched: EmbeddedGateway): void {
    watched.onExit((exit) => {
      if (this.stopping) return;
      const why =
        this.unanswered === watched ? "it stopped answering" : `it exited (${describeExit(exit)})`;
      this.options.note(`the gateway died: ${why}; starting it again`);
      void this.restart(why);
    });
  }

  /** Starts a child in the dead one's place on its addresses, backing off, or gives up. */
  private async restart(why: string): Promise<void> {
    this.restarting = true;
    let delay = FIRST_DELAY_MS;
    try {
      while (!this.stopping) {
        if (this.tooMany(why)) return;
        await new Promise((resolve) => setTimeout(resolve, delay));
        if (this.stopping) return;
        try {
          const next = await launchServerGateway(this.options, this.addresses);
          if (this.stopping) {
            await next.stop();
            return;
          }
          this.child = next;
          this.watch(next);
          this.options.note(`gateway restarted (pid ${next.pid}) after ${why}`);
          return;
        } catch (error) {
          why = `a failed restart: ${errorMessage(error)}`;
          delay *= 2;
        }
      }
    } finally {
      this.restarting = false;
    }
  }

  /** Counts this restart; past MAX_RESTARTS within the window the server is told to stop. */
  private tooMany(why: string): boolean {
    const now = Date.now();
    while (this.restarts.length && (this.restarts[0] ?? now) < now - RESTART_WINDOW_MS)
      this.restarts.shift();
    if (this.restarts.length >= MAX_RESTARTS) {
      this.options.onGiveUp(
        `the gateway died ${MAX_RESTARTS} times within ${RESTART_WINDOW_MS / 1000} s (last: ${why}); the server stops, and every box with it`,
      );
      return true;
    }
    this.restarts.push(now);
    return false;
  }

  private checkHealth(): void {
    const late = Date.now() - this.due > LATE_MS;
    this.due = Date.now() + HEALTH_EVERY_MS;
    if (this.asking || this.stopping || this.restarting) return;
    // the answers may be waiting behind the server's own loop: no verdict from a held one
    if (late) {
      this.misses = 0;
      return;
    }
    this.asking = true;
    const asked = this.child;
    void askHealth(this.port, HEALTH_TIMEOUT_MS).then((answer) => {
      this.asking = false;
      if (asked !== this.child || this.stopping) return;
      this.misses = answer ? 0 : this.misses + 1;
      if (this.misses < HEALTH_MISSES) return;
      this.misses = 0;
      this.unanswered = asked;
      this.options.note(
        `the gateway (pid ${asked.pid}) did not answer /healthz ${HEALTH_MISSES} times in a row`,
      );
      asked.kill();
    });
  }
}
