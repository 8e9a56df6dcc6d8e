import { mkdir, rm } from "node:fs/promises";
import { connectEngine } from "../../boundary/box/connect.ts";
import { loadTestedConfig } from "../../boundary/gateway/policy/vetting.ts";
import type { ListenAddress } from "../../boundary/gateway/process/gateway.ts";
import { runningGateway } from "../../boundary/gateway/process/health.ts";
import { defaultListen } from "../../boundary/gateway/process/listen.ts";
import { superviseGateway } from "../../boundary/gateway/process/supervised.ts";
import { StoreSweep } from "../../boundary/store/passes.ts";
import { sendToolName } from "../../ground/chat/terms.ts";
import { botBindings } from "../../ground/config/bot-bindings.ts";
import { type LoadedConfig, loadConfig } from "../../ground/config/load.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { errorMessage, RosterError } from "../../ground/errors.ts";
import { replaceFile } from "../../ground/files/atomic-replace.ts";
import { LockBusy, withFileLock } from "../../ground/files/file-lock.ts";
import { actionSpans } from "../../ground/telemetry/action-spans.ts";
import { tracingFor } from "../../ground/telemetry/tracing.ts";
import { rosterVersionLine } from "../../ground/version.ts";
import { watchJournal } from "../../records/journal/journal.ts";
import { serverReadyPool } from "../../work/ready/server-pool.ts";
import { SpareClones } from "../../work/repos/spare-clones.ts";
import { LogSweeper } from "../../work/retention/log-sweep.ts";
import { SessionRouter } from "../../work/sessions/router.ts";
import { OfferDesk } from "../actions/offers.ts";
import { CHAT_PLATFORMS } from "../chat/platforms.ts";
import type { RunningConsole } from "../console/serve.ts";
import type { RunningHooks } from "../hooks/listener.ts";
import { startHooks } from "../hooks/start.ts";
import { ListenerSupervisor } from "../listeners/supervisor.ts";
import type { RunningMetrics } from "../metrics/metrics-listener.ts";
import { startMetrics } from "../metrics/start.ts";
import { chatCommands } from "../slash/from-chat.ts";
import { Dispatcher } from "./dispatch.ts";
import { handedTurn } from "./handed-turn.ts";
import { recover } from "./recover.ts";
import { type RunSocket, type RunSocketOptions, serveRuns } from "./run-socket.ts";
import { readServerState, type ServerState, serverLockFile, serverStateFile } from "./state.ts";
import { startWebConsole } from "./web-console.ts";

export { readServerState, type ServerState, serverStateFile } from "./state.ts";

/**
 * `roster server start`: one foreground process that holds the gateway (and
 * with it the action host) as a supervised child process of its own
 * (gateway/process/supervised.ts), the warm sessions chat listeners feed, and task
 * dispatch. On start it recovers from whatever the last one left (orphan
 * boxes, crashed records, claimed tasks); on SIGTERM or SIGINT it stops
 * starting work, ends sessions cleanly, requeues interrupted tasks, finishes
 * every record and closes the gateway last, so no box outlives its door.
 */
export interface ServerOptions {
  paths: RosterPaths;
  /** Concurrent boxes (task runs and sessions together). */
  cap: number;
  /** Run what is due, wait for it, then exit. */
  once: boolean;
  /** Start no chat listeners. */
  noListen: boolean;
  /** Serve no web console (also `[console] enabled = false`). */
  noConsole?: boolean;
  listen?: ListenAddress[];
  note: (text: string) => void;
  env?: NodeJS.ProcessEnv;
  /** Dispatch polling period. */
  tickMs?: number;
}

export async function startServer(options: ServerOptions): Promise<number> {
  const { paths } = options;
  const { config } = loadTestedConfig(paths, "the server did not start");
  // one server per deployment, decided atomically before anything is touched:
  // two starts at once would both recover, and each would treat what the other
  // is starting as left over. A lock left by a dead server is taken over.
  await mkdir(paths.state, { recursive: true });
  let holding = false;
  try {
    return await withFileLock(serverLockFile(paths), "the server", () => {
      holding = true;
      return serve(options, config);
    });
  } catch (error) {
    if (holding || !(error instanceof LockBusy)) throw error;
    throw new RosterError(
      `a server is already running for this deployment (pid ${error.holder}); it holds ${serverLockFile(paths)}, so nothing was started or stopped`,
      { exitCode: 2 },
    );
  }
}

/** The server itself, run while holding the deployment's server lock. */
async function serve(options: ServerOptions, config: LoadedConfig): Promise<number> {
  const { paths, note } = options;
  const env = options.env ?? process.env;
  await recoverFirst(paths, config, env, note);
  // a gateway that can't be kept up stops the server: no box runs on without its door
  const halt = new AbortController();
  const gateway = await superviseGateway({
    paths,
    listen: options.listen ?? (await defaultListen(paths.config)),
    env,
    note,
    onGiveUp: (reason) => halt.abort(new Error(reason)),
  });
  const stateFile = await announce(options, gateway);
  const services = await startServices(options, config, env, () => gateway.port);
  let exitCode = 0;
  try {
    await runUntilStopped(options, services.dispatcher, halt.signal, services.beforeTick);
  } catch (error) {
    note(`server: ${errorMessage(error)}`);
    exitCode = 1;
  } finally {
    await stopServices(services);
    // the door goes last, so no box outlives it
    await gateway.stop();
    await rm(stateFile, { force: true });
    note("server stopped");
  }
  return exitCode;
}

/** Writes state/server.json (what `roster server status` and `roster run` read) and says so. */
async function announce(
  options: ServerOptions,
  gateway: { port: number; addresses: ListenAddress[] },
): Promise<string> {
  const { paths } = options;
  const state: ServerState = {
    pid: process.pid,
    started_at: new Date().toISOString(),
    cap: options.cap,
    once: options.once,
    gateway: { port: gateway.port, addrs: gateway.addresses.map((a) => a.host) },
    version: rosterVersionLine(),
  };
  await mkdir(paths.state, { recursive: true });
  const stateFile = serverStateFile(paths);
  await replaceFile(stateFile, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o644 });
  options.note(
    `server ${process.pid}: gateway on ${gateway.addresses.map((a) => `${a.host}:${a.port}`).join(", ")}; up to ${options.cap} boxes${options.once ? "; once" : ""}`,
  );
  return stateFile;
}

/** What the server runs behind its door, each stopped by stopServices. */
interface Services {
  ready: ReturnType<typeof serverReadyPool> | undefined;
  spares: SpareClones | undefined;
  router: SessionRouter;
  listeners: ListenerSupervisor;
  webConsole: RunningConsole | undefined;
  dispatcher: Dispatcher;
  runs: RunSocket | undefined;
  sweep: StoreSweep | undefined;
  logs: LogSweeper | undefined;
  metrics: RunningMetrics | undefined;
  /** Signed webhooks, each delivery a relayed task (`[[webhook]]`; none in --once). */
  hooks: RunningHooks | undefined;
  /** The server's part of the traces: what it holds goes out as it stops. */
  traces: { unwatch: (() => void) | undefined; flush: () => Promise<void> } | undefined;
  /** Before each dispatch tick: count the sessions, offer, sweep, refill the ready boxes. */
  beforeTick: () => Promise<void>;
}

/**
 * Sessions and their ready boxes, chat listeners, the console, dispatch and
 * the runs `roster run` hands over. Every box counts toward one cap, read live.
 */
async function startServices(
  options: ServerOptions,
  config: LoadedConfig,
  env: NodeJS.ProcessEnv,
  gatewayPort: () => number,
): Promise<Services> {
  const { paths, note } = options;
  const counts = { sessions: 0, runs: (): number => 0, dispatched: (): number => 0 };
  const others = () => counts.sessions + counts.runs();
  // boxes and gated repos' clones made before their run (not in --once: nothing would take them)
  const ready = options.once
    ? undefined
    : serverReadyPool({
        paths,
        env,
        note,
        cap: options.cap,
        // read live: a task the dispatcher just started counts before the next tick
        busy: (): number => others() + counts.dispatched(),
      });
  const spares = options.once ? undefined : await SpareClones.inState(paths.state);
  const router = new SessionRouter({
    paths,
    note,
    env,
    ...(ready ? { ready: ready.sessions } : {}),
    ...(spares ? { spares } : {}),
    queueBound: 64,
    replyBy: (provider) =>
      provider === "linked"
        ? `this conversation is one person's linked surfaces: answer on the surface the latest message came from (its block names the provider and channel), through that provider's send action (${CHAT_PLATFORMS.map((platform) => sendToolName(platform.name)).join(", ")}); your plain text is not shown to anyone`
        : `only through the ${sendToolName(provider)} action: your plain text is not shown to anyone`,
    recordReplies: false,
  });
  const listeners = startListeners(options, config, router, env);
  const webConsole =
    !options.once && !options.noConsole && config.org.console?.enabled !== false
      ? await startWebConsole(paths, config, router, note)
      : undefined;
  const ahead = { ...(ready ? { takeReady: ready.takeReady } : {}), ...(spares ? { spares } : {}) };
  const dispatcher = new Dispatcher({
    paths,
    cap: options.cap,
    note,
    env,
    otherBoxes: others,
    ...ahead,
  });
  counts.dispatched = () => dispatcher.active;
  const forRuns = { ...ahead, ...(ready ? { takeReadyExec: ready.takeReadyExec } : {}) };
  const runs = options.once ? undefined : await takeOverRuns(options, env, router, forRuns);
  if (runs) counts.runs = () => runs.active();
  // every store snapshotted once a day, beside the passes runs take as they settle
  const sweep = options.once ? undefined : new StoreSweep(paths, note);
  // the growing logs rotated and kept to [retention], at most once a minute
  const logs = options.once ? undefined : new LogSweeper(paths, () => config.org.retention, note);
  const beforeTick = async () => {
    counts.sessions = (await router.sessions()).length;
    listeners.offerDue();
    sweep?.tick();
    logs?.tick();
    await ready?.tick();
  };
  // approvals at the console or in chat are decided here: they join their runs' traces
  const tracing = await tracingFor(config.org.telemetry?.otlp_endpoint, "roster");
  const unwatch = tracing ? watchJournal(actionSpans(tracing)) : undefined;
  const telemetry = options.once ? undefined : config.org.telemetry;
  const metrics = await startMetrics(telemetry, note, gatewayPort, {
    paths,
    boxes: () => ({ task: dispatcher.active, session: counts.sessions, run: counts.runs() }),
    ready: () => ready?.pool.count() ?? 0,
    sessions: () => counts.sessions,
  });
  const traces = tracing ? { unwatch, flush: () => tracing.flush() } : undefined;
  const hooks = options.once ? undefined : await startHooks(paths, config.org, note);
  return {
    ready,
    spares,
    router,
    listeners,
    webConsole,
    dispatcher,
    runs,
    sweep,
    logs,
    metrics,
    hooks,
    traces,
    beforeTick,
  };
}

/** Chat listeners for every bound bot (none with --no-listen or --once). */
function startListeners(
  options: ServerOptions,
  config: LoadedConfig,
  router: SessionRouter,
  env: NodeJS.ProcessEnv,
): ListenerSupervisor {
  const { paths, note } = options;
  // approvers and offer times are read when used, so an org.toml edit takes effect at once
  const offers = new OfferDesk(paths, () => loadConfig(paths.config).org.chat);
  const commands = chatCommands(paths);
  const listeners = new ListenerSupervisor({ paths, router, note, env, offers, commands });
  if (!options.noListen && !options.once) {
    const bindings = botBindings(config.workers);
    listeners.start(bindings);
    for (const binding of bindings)
      note(`listening for ${binding.worker} on ${binding.platform} (bot "${binding.credential}")`);
  }
  return listeners;
}

/**
 * `roster run` hands its runs to this server: they always run (someone is
 * waiting at a terminal), and due tasks wait for them; a linked terminal hands
 * it its lines. A socket that can't be served is reported; each `roster run`
 * then starts its own box. What was made ahead (`ahead`) is theirs to take.
 */
async function takeOverRuns(
  options: ServerOptions,
  env: NodeJS.ProcessEnv,
  router: SessionRouter,
  ahead: Pick<RunSocketOptions, "takeReady" | "takeReadyExec" | "spares">,
): Promise<RunSocket | undefined> {
  try {
    return await serveRuns({
      paths: options.paths,
      env,
      note: options.note,
      // a linked terminal's lines are turns of its group's one session, held here
      turn: (request, send) => handedTurn(options.paths, router, request, send),
      ...ahead,
    });
  } catch (error) {
    options.note(
      `runs are not taken over (each \`roster run\` starts its own box): ${errorMessage(error)}`,
    );
    return undefined;
  }
}

/** Stops what startServices started, in the order that leaves nothing half-done. */
async function stopServices(services: Services): Promise<void> {
  await services.metrics?.close();
  // no delivery is filed once the server has begun to stop
  await services.hooks?.close();
  await services.runs?.close();
  await services.webConsole?.close();
  await services.listeners.stop();
  await services.dispatcher.stop();
  await services.router.closeAll();
  await services.ready?.close();
  await services.spares?.close();
  await services.sweep?.idle();
  await services.logs?.idle();
  services.traces?.unwatch?.();
  await services.traces?.flush().catch(() => undefined);
}

/**
 * Before anything starts: no other server or gateway for this deployment, and
 * whatever the last server left behind (boxes, records, claimed tasks) settled.
 */
async function recoverFirst(
  paths: RosterPaths,
  config: LoadedConfig,
  env: NodeJS.ProcessEnv,
  note: (text: string) => void,
): Promise<void> {
  // a server from before the lock existed still announces itself here
  const other = readServerState(paths);
  if (other) {
    throw new RosterError(`a server is already running for this deployment (pid ${other.pid})`, {
      exitCode: 2,
    });
  }
  if (await runningGateway(paths.state, paths.config)) {
    throw new RosterError(
      "a gateway is already running for this deployment (roster gateway start?): stop it; the server runs its own",
      { exitCode: 2 },
    );
  }

  const engine = await connectEngine({
    env,
    ...(config.org.engine?.kind ? { kind: config.org.engine.kind } : {}),
  });
  const recovered = await recover(engine, paths);
  if (recovered.reaped) note(`reaped ${recovered.reaped} orphaned box(es)`);
  for (const id of recovered.crashed) note(`run ${id} crashed with the last server; recorded`);
  for (const id of recovered.finished)
    note(
      `run ${id} had answered before the last server stopped; its snapshot is taken and its record finished`,
    );
  for (const id of recovered.settled) note(`task ${id} had reported its outcome; settled`);
  for (const id of recovered.requeued) note(`task ${id} was interrupted; requeued`);
}

/** Dispatches until SIGTERM or SIGINT (with --once: the due tasks, then it returns). */
async function runUntilStopped(
  options: ServerOptions,
  dispatcher: Dispatcher,
  halt: AbortSignal,
  beforeTick: () => Promise<void>,
): Promise<void> {
  const { note } = options;
  const stopping = new Promise<string>((resolve, reject) => {
    process.once("SIGTERM", () => resolve("SIGTERM"));
    process.once("SIGINT", () => resolve("SIGINT"));
    halt.addEventListener("abort", () => reject(halt.reason), { once: true });
  });
  if (options.once) {
    await dispatcher.tick();
    await Promise.race([dispatcher.drain(), stopping]);
  } else {
    const tickMs = options.tickMs ?? 2_000;
    let ticking = false;
    const timer = setInterval(() => {
      if (ticking) return;
      ticking = true;
      void beforeTick()
        .then(() => dispatcher.tick())
        .catch((error: unknown) => note(`dispatch: ${errorMessage(error)}`))
        .finally(() => {
          ticking = false;
        });
    }, tickMs);
    const signal = await stopping.finally(() => clearInterval(timer));
    note(`${signal}: stopping (sessions end, running tasks are requeued)`);
  }
}
