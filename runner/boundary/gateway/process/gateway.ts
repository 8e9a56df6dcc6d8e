import { mkdir, rm } from "node:fs/promises";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import type { RosterPaths } from "../../../ground/config/paths.ts";
import { replaceFile } from "../../../ground/files/atomic-replace.ts";
import type { TakenBy } from "../../../records/config-history/history.ts";
import type { AuditLog } from "../audit/audit.ts";
import { closeDoor, openDoor } from "../doors/door.ts";
import type { RunDoors } from "../doors/run-doors.ts";
import type { ActionHostFactory } from "../exchange/action-host.ts";
import { createProxyServers, type ServerDeps } from "../exchange/server.ts";
import { type GatewayTimeouts, shardCount } from "../settings/defaults.ts";
import type { CertificateAuthority } from "../trust/ca.ts";
import type { Upstreams } from "../upstream/pools.ts";
import { keepTaken, noteToStderr, watchConfig } from "./config-watch.ts";
import { serverDeps } from "./deps.ts";
import { openRunDoors } from "./run-door-proxy.ts";
import { withShardMetrics } from "./shard-metrics.ts";
import { Shards } from "./shards.ts";

/**
 * The gateway as one object: start it (the CLI's `roster gateway start`, the
 * daemon, or `roster run` embedding it for one run), ask where it listens, stop
 * it. Its binding is recorded in state/gateway.json for the CLI and the runner.
 */
export { DEFAULT_GATEWAY_PORT } from "../settings/defaults.ts";

export interface ListenAddress {
  host: string;
  port: number;
}

export interface GatewayOptions {
  paths: RosterPaths;
  listen: ListenAddress[];
  /** The action host behind actions.roster.internal, made by whoever starts this gateway. */
  actions: ActionHostFactory;
  /** Overrides over `[gateway.timeouts]` and the defaults (tests use short ones). */
  timeouts?: Partial<GatewayTimeouts>;
  /** Write state/gateway.json (off for throwaway embedded gateways in tests). */
  recordState?: boolean;
  /** Ports of host services no box may reach (the console's), refused before any grant. */
  closedPorts?: number[];
  /** The folder of the door boxes use (door.ts): listen on its socket too. */
  door?: string;
  /** The process that supervises this one (the server, for its gateway child): written to the state. */
  supervisor?: number;
  /** Where the gateway says what an operator must know (a config refused): stderr by default. */
  note?: (text: string) => void;
  /** Whose gateway this is, as the config history says who took a config: "gateway" by default. */
  takenBy?: Exclude<TakenBy, "rollback">;
  /** Shards serving the run doors, over `[gateway] shards` (a run's own gateway: none). */
  shards?: number;
}

export interface GatewayState {
  port: number;
  addrs: string[];
  config_root: string;
  pid: number;
  /** The folder holding the door's socket, mounted into every box this gateway serves. */
  door?: string;
  /** The server whose child this gateway is: it restarts it, and its runs need not ask /healthz. */
  supervisor?: number;
}

export class Gateway {
  private constructor(
    private readonly servers: Server[],
    private readonly inner: Server,
    private readonly upstreams: Upstreams,
    private readonly audit: AuditLog,
    readonly ca: CertificateAuthority,
    readonly addresses: ListenAddress[],
    /** Where the door's socket is (undefined: this gateway serves no box). */
    readonly door: string | undefined,
    /** Each run's own door, served in this process (undefined: by shards, or no box). */
    readonly runDoors: RunDoors | undefined,
    /** The processes serving the run doors, when the gateway has shards (shards.ts). */
    readonly shards: Shards | undefined,
    private readonly stateFile: string | undefined,
    private readonly unwatch: () => void,
  ) {}

  static async start(options: GatewayOptions): Promise<Gateway> {
    const deps = await serverDeps(options);
    const note = options.note ?? noteToStderr;
    const unwatch = watchConfig(deps.config, note);
    keepTaken(deps.config, options, note);
    let listening: Listening;
    try {
      listening = await listenAll(deps, options);
    } catch (error) {
      unwatch();
      throw error;
    }
    const { servers, bound, inner, runDoors, shards } = listening;
    const stateFile = (options.recordState ?? true) ? await recordState(options, bound) : undefined;
    return new Gateway(
      servers,
      inner,
      deps.upstreams,
      deps.audit,
      deps.ca,
      bound,
      options.door,
      runDoors,
      shards,
      stateFile,
      unwatch,
    );
  }

  get port(): number {
    return this.addresses[0]?.port ?? 0;
  }

  /**
   * Loads, after the fact, what only a box's first request needs (the leaf
   * minter, the upstream trust store): whoever started the gateway calls this
   * once it has said the gateway is up, so nobody waits for it.
   */
  warm(): void {
    this.ca.warm();
    this.upstreams.warm();
  }

  /**
   * Stops serving. Run doors' folders stay (running boxes have them mounted, and
   * a gateway restarted in place reopens them) unless `removeRunDoors`: an
   * embedded gateway's runs end with it.
   */
  async stop(options: { removeRunDoors?: boolean } = {}): Promise<void> {
    this.unwatch();
    await this.runDoors?.closeAll(options.removeRunDoors ?? false);
    await this.shards?.closeAll(options.removeRunDoors ?? false);
    for (const server of this.servers) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    this.inner.closeAllConnections();
    await this.upstreams.close();
    await this.audit.close();
    if (this.stateFile) await rm(this.stateFile, { force: true });
    if (this.door) await closeDoor(this.door);
  }
}

interface Listening {
  servers: Server[];
  bound: ListenAddress[];
  /** The proxy that serves what a CONNECT tunnel carries (the last one made). */
  inner: Server;
  runDoors: RunDoors | undefined;
  shards: Shards | undefined;
}

/**
 * Listens on every address, then on the door's socket and the run doors; a
 * failure part-way closes what was opened and leaves a door another gateway
 * holds alone.
 */
async function listenAll(deps: ServerDeps, options: GatewayOptions): Promise<Listening> {
  const servers: Server[] = [];
  const bound: ListenAddress[] = [];
  let inner: Server | undefined;
  let runDoors: RunDoors | undefined;
  let shards: Shards | undefined;
  const count = options.door
    ? (options.shards ?? shardCount(deps.config.get().org.gateway?.shards, availableParallelism()))
    : 0;
  // shards start while the gateway listens: once its port answers, its doors open
  const starting =
    options.door && count > 0 ? startShards(deps, options, options.door, count) : undefined;
  starting?.catch(() => undefined);
  try {
    for (const address of options.listen) {
      const proxy = createProxyServers(deps);
      inner = proxy.inner;
      // port 0 on later addresses reuses the first one's port: one port, several addresses
      const port = address.port === 0 && bound[0] ? bound[0].port : address.port;
      await listenOn(proxy.outer, port, address.host);
      servers.push(proxy.outer, proxy.inner);
      const info = proxy.outer.address() as AddressInfo;
      bound.push({ host: address.host, port: info.port });
      deps.closed.closeGatewayPort(info.port);
    }
    if (options.door) {
      const doorProxy = createProxyServers(deps);
      inner = doorProxy.inner;
      await openDoor(doorProxy.outer, options.door);
      servers.push(doorProxy.outer, doorProxy.inner);
      if (starting) {
        shards = await starting;
        await shards.reopen();
      } else {
        const proxy = createProxyServers(deps);
        servers.push(proxy.outer, proxy.inner);
        runDoors = openRunDoors(deps, proxy.outer, options.door, options.paths.identity);
        deps.doors = runDoors;
        await runDoors.reopen();
      }
    }
  } catch (error) {
    await runDoors?.closeAll(false);
    await starting?.then(
      (started) => started.closeAll(false),
      () => undefined,
    );
    // a door this gateway opened goes with its server (closing it unlinks the
    // socket); one it found taken is another gateway's, and stays
    for (const server of servers) server.close();
    throw error;
  }
  if (!inner) throw new Error("the gateway needs at least one address to listen on");
  return { servers, bound, inner, runDoors, shards };
}

function listenOn(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolveListen, reject) => {
    server.once("error", reject);
    // a deep accept queue: a burst of boxes connecting at once is queued, not dropped
    server.listen({ port, host, backlog: 4096 }, () => {
      server.off("error", reject);
      resolveListen();
    });
  });
}

/** state/gateway.json: where this gateway listens, for the CLI and the runner. */
async function recordState(options: GatewayOptions, bound: ListenAddress[]): Promise<string> {
  const { paths } = options;
  const stateFile = join(paths.state, "gateway.json");
  const state: GatewayState = {
    port: bound[0]?.port ?? 0,
    addrs: bound.map((entry) => entry.host),
    config_root: paths.config,
    pid: process.pid,
    ...(options.door ? { door: options.door } : {}),
    ...(options.supervisor ? { supervisor: options.supervisor } : {}),
  };
  await mkdir(paths.state, { recursive: true });
  await replaceFile(stateFile, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o644 });
  return stateFile;
}

/** The shards serving the run doors, given this process's budgets and action host; /metrics adds theirs. */
async function startShards(
  deps: ServerDeps,
  options: GatewayOptions,
  ownerDir: string,
  count: number,
): Promise<Shards> {
  const shards = await Shards.start({
    paths: options.paths,
    ownerDir,
    count,
    budgets: deps.budgets,
    actions: deps.actions,
    note: options.note ?? noteToStderr,
  });
  deps.doors = shards;
  if (deps.metrics) deps.metrics = withShardMetrics(deps.metrics, shards);
  return shards;
}
