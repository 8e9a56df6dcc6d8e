import { mkdir, rm } from "node:fs/promises";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { RosterPaths } from "../../../ground/config/paths.ts";
import type { TelemetrySection } from "../../../ground/config/server-schema.ts";
import { replaceFile } from "../../../ground/files/atomic-replace.ts";
import { actionSpans } from "../../../ground/telemetry/action-spans.ts";
import { tracingFor } from "../../../ground/telemetry/tracing.ts";
import { parseByteSize } from "../../../ground/text/byte-size.ts";
import { checkVaultOpens } from "../../../ground/vault/vault-file.ts";
import type { TakenBy } from "../../../records/config-history/history.ts";
import { watchJournal } from "../../../records/journal/journal.ts";
import { AUDIT_MAX_PER_RUN_DEFAULT, AuditLog, type DecisionRecord } from "../audit/audit.ts";
import type { DoorMetrics } from "../audit/door-metrics.ts";
import { bodyBudgetFor } from "../bodies/budget.ts";
import { Credentials } from "../credentials/inject.ts";
import { readCredential } from "../credentials/vault.ts";
import { closeDoor, openDoor } from "../doors/door.ts";
import { DOOR_CAP_RULE, RunDoors } from "../doors/run-doors.ts";
import type { ActionHostFactory } from "../exchange/action-host.ts";
import { requestFacts } from "../exchange/admission.ts";
import { arrivedAtDoor } from "../exchange/caller.ts";
import { createProxyServers, type ServerDeps } from "../exchange/server.ts";
import { testedConfigSource } from "../policy/vetting.ts";
import { type GatewayTimeouts, resolveTimeouts } from "../settings/defaults.ts";
import { Budgets } from "../spend/budget.ts";
import { CertificateAuthority } from "../trust/ca.ts";
import { ClosedPorts } from "../upstream/closed-ports.ts";
import { type Upstreams, upstreamsFor } from "../upstream/pools.ts";
import { keepTaken, noteToStderr, watchConfig } from "./config-watch.ts";

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
    /** Each run's own door (undefined: this gateway serves no box). */
    readonly runDoors: RunDoors | undefined,
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
    const { servers, bound, inner, runDoors } = listening;
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

/** What every proxy server of one gateway shares: config, audit, budgets, upstreams, the desk. */
async function serverDeps(options: GatewayOptions): Promise<ServerDeps> {
  const { paths } = options;
  // a sealed vault its key does not open stops the start with one line naming the file
  checkVaultOpens(paths.vault);
  const config = testedConfigSource(paths.config, { vaultDir: paths.vault });
  const loaded = config.get();
  const section = loaded.org.gateway ?? {};
  const ca = await CertificateAuthority.open(paths.ca);
  const auditShare = (org: typeof loaded.org) =>
    parseByteSize(org.gateway?.audit_max_per_run ?? AUDIT_MAX_PER_RUN_DEFAULT);
  const audit = new AuditLog(paths.audit, auditShare(loaded.org));
  // each line names the config that judged it, which the history keeps (keepTaken)
  audit.configDigest = () => config.digest;
  config.onChange((next) => {
    audit.maxPerRun = auditShare(next.org);
  });
  const budgets = new Budgets(
    paths.audit,
    loaded.meters,
    loaded.limits,
    loaded.org.budget?.price ?? [],
  );
  config.onChange((next) =>
    budgets.reconfigure(next.meters, next.limits, next.org.budget?.price ?? []),
  );
  const timeouts = resolveTimeouts(section.timeouts, options.timeouts);
  // the console's and the gateway's own ports are closed by every gateway (embedded ones
  // too), by name and by the address a name resolves to
  const closed = ClosedPorts.forConfig(loaded.org, options.closedPorts);
  // the parent proxy's credential is read from the vault at each new tunnel, never kept
  const upstreams = upstreamsFor(section, timeouts, closed, (name) =>
    readCredential(paths.vault, name),
  );
  const maxBodyBytes = section.max_body_bytes ?? 64 * 1024 * 1024;
  // counted and traced only where a monitoring stack reads them: the libraries load for nobody else
  const metrics = await watchDoor(audit, loaded.org.telemetry);
  return {
    ...(metrics ? { metrics } : {}),
    config,
    audit,
    budgets,
    upstreams,
    actions: options.actions(paths, config),
    credentials: new Credentials({ vaultDir: paths.vault, auditDir: paths.audit, upstreams }),
    maxBodyBytes,
    bodies: bodyBudgetFor(maxBodyBytes),
    closed,
    ca,
    identityDir: paths.identity,
    configRoot: paths.config,
    resolve: upstreams.options.resolve,
    timeouts,
  };
}

/**
 * What telemetry asks of the door, told of every audit line from now on: its
 * metrics (`metrics_listen`), returned for /metrics, and its decisions as
 * spans under their runs (`otlp_endpoint`), sent before the audit log closes.
 */
async function watchDoor(
  audit: AuditLog,
  telemetry: TelemetrySection | undefined,
): Promise<DoorMetrics | undefined> {
  const observers: Array<(record: DecisionRecord, seconds: number) => void> = [];
  let metrics: DoorMetrics | undefined;
  if (telemetry?.metrics_listen) {
    const { DoorMetrics } = await import("../audit/door-metrics.ts");
    const made = new DoorMetrics();
    metrics = made;
    observers.push((record, seconds) => made.record(record, seconds));
  }
  const tracing = tracingFor(telemetry?.otlp_endpoint, "roster-gateway");
  if (tracing) {
    const { doorSpans } = await import("../audit/door-spans.ts");
    const traced = await tracing;
    observers.push(doorSpans(traced));
    // the action host answers in this process: its decisions join their runs' traces
    watchJournal(actionSpans(traced));
    audit.onClose = () => traced.shutdown().catch(() => undefined);
  }
  if (observers.length)
    audit.observer = (record, seconds) => {
      for (const observe of observers) observe(record, seconds);
    };
  return metrics;
}

interface Listening {
  servers: Server[];
  bound: ListenAddress[];
  /** The proxy that serves what a CONNECT tunnel carries (the last one made). */
  inner: Server;
  runDoors: RunDoors | undefined;
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
      const proxy = createProxyServers(deps);
      servers.push(proxy.outer, proxy.inner);
      runDoors = openRunDoors(deps, proxy.outer, options.door, options.paths.identity);
      deps.doors = runDoors;
      await runDoors.reopen();
    }
  } catch (error) {
    await runDoors?.closeAll(false);
    // a door this gateway opened goes with its server (closing it unlinks the
    // socket); one it found taken is another gateway's, and stays
    for (const server of servers) server.close();
    throw error;
  }
  if (!inner) throw new Error("the gateway needs at least one address to listen on");
  return { servers, bound, inner, runDoors };
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

/**
 * The run doors, served by a proxy of their own: a connection is handed to it
 * once its door has admitted it, and a box reaching its cap is audited once.
 */
function openRunDoors(
  deps: ServerDeps,
  outer: Server,
  ownerDir: string,
  identityDir: string,
): RunDoors {
  return new RunDoors({
    ownerDir,
    identityDir,
    accept: (socket, door) => {
      // the run is the door the bytes came through (caller.ts), known before a byte is read
      arrivedAtDoor(socket, door.identity);
      outer.emit("connection", socket);
    },
    onCap: (door, cap) =>
      deps.audit.record(
        requestFacts({
          target: { protocol: "http", host: "door", port: 0 },
          method: "OPEN",
          rawPath: "/",
          headers: {},
          identity: door.identity,
          bodySize: 0,
        }),
        {
          verdict: "deny",
          rule: DOOR_CAP_RULE,
          status: 503,
          note: `the box holds ${cap} connections to its door, the most one box may: further ones are closed at once (written once per run)`,
        },
      ),
  });
}
