import type { EndedBy as BoxEndedBy, BoxHandle, BoxWatch } from "../../boundary/box/lifecycle.ts";
import { runDoorDir } from "../../boundary/gateway/doors/door.ts";
import { durationMs } from "../../ground/config/duration.ts";
import { parseByteSize } from "../../ground/text/byte-size.ts";
import { writeRecord } from "../../records/run-records/run-record.ts";
import type { RunHome } from "../home/build-home.ts";
import type { CompiledPrompt } from "../prompt/compile.ts";
import { agentCommand } from "./agent-command.ts";
import { agentEvents } from "./agent-events.ts";
import { BoxOutput } from "./box-output.ts";
import { DiskWatch } from "./disk-watch.ts";
import { handOver } from "./hand-off.ts";
import { channelsOf } from "./run-context.ts";
import type { LimitReached, RunRequest } from "./run-request.ts";
import { StallWatchdog, stallMessage } from "./stall-watchdog.ts";
import { commandOf, engineOf, type Starting } from "./start-2-record.ts";
import { type BoxParts, prepareBox, startPrepared } from "./start-4-box.ts";

/**
 * Phase 3 of a run's start (run.ts names the four): the launch, step by
 * step, from a written record to a running box, with every limit that
 * watches it. Each step is its own
 * function so the launch reads as the sequence it is.
 */

/** How a limit stops the run (Run.stopFor); one met before the run object exists waits for it. */
export type StopFor = (limit: LimitReached["limit"], endedBy: BoxEndedBy, message: string) => void;

/** The box's $HOME, token and door: a ready box's, made before the run, or made now. */
export async function boxParts(request: RunRequest, starting: Starting): Promise<BoxParts> {
  const { ready } = request;
  // a ready box's token was bound and its door opened when it was taken over
  if (ready)
    return {
      home: ready.home,
      token: ready.token,
      door: runDoorDir(ready.box.gateway.door, ready.id),
    };
  const channel = engineOf(request)?.session?.channel;
  const origins = channelsOf(request.paths, starting.record);
  return prepareBox(request.paths, starting, { channel, origins, spares: request.spares });
}

/** The record names the repos cloned for the run, once there are any. */
export async function recordRepos(starting: Starting, home: RunHome): Promise<void> {
  if (!Object.keys(home.repos.record).length) return;
  starting.record = { ...starting.record, repos: home.repos.record };
  await writeRecord(starting.dir, starting.record);
}

/** The stall watch over the run's $HOME, unless the run has none. */
export function stallWatch(
  request: RunRequest,
  starting: Starting,
  home: RunHome,
  stop: StopFor,
): StallWatchdog | undefined {
  const stallMs =
    request.stall === "none" ? undefined : durationMs(starting.box.worker.box.stall_after);
  if (stallMs === undefined) return undefined;
  return new StallWatchdog(stallMs, home.home, () =>
    stop("stall", "stalled", stallMessage(stallMs)),
  );
}

/**
 * The box's lines as pi's events: as they are for pi, read from another
 * agent's own by its reader for the run's agent and kind (a session's stream
 * is the agent's streaming mode).
 */
function agentLines(starting: Starting, onLine: (line: string) => void): (line: string) => void {
  if (!starting.record.agent) return onLine;
  const events = agentEvents(starting.record);
  return (line) => {
    for (const event of events.read(line)) onLine(JSON.stringify(event));
  };
}

/** Every byte the box writes is read through its bounds (box-output.ts), logged for an engine run. */
export function boxOutput(
  request: RunRequest,
  starting: Starting,
  watchdog: StallWatchdog | undefined,
  stop: StopFor,
): BoxOutput {
  return new BoxOutput({
    logDir: engineOf(request) ? starting.dir : undefined,
    maxBytes: parseByteSize(starting.box.worker.box.max_output),
    ...(request.onLine ? { onLine: agentLines(starting, request.onLine) } : {}),
    ...(request.onStdout ? { onStdout: request.onStdout } : {}),
    ...(request.onStderr ? { onStderr: request.onStderr } : {}),
    activity: () => watchdog?.activity(),
    onOver: (message) => stop("output", "output", message),
  });
}

/** The variables the run adds to its box's. */
function boxEnv(request: RunRequest, ceiling_min: number): Record<string, string> {
  const engine = engineOf(request);
  return {
    // one-shot and task runs only, as the box contract has it; never sessions
    ...(request.kind === "box" || request.kind === "task"
      ? { ROSTER_CEILING_MIN: String(ceiling_min) }
      : {}),
    ...(engine?.taskId ? { ROSTER_TASK_ID: engine.taskId } : {}),
    ...request.boxEnv,
  };
}

/** What ends the box besides its own exit: the ceiling, the caller's abort, a lost gateway. */
function boxWatch(request: RunRequest, starting: Starting, ceiling_min: number): BoxWatch {
  return {
    // the one place the ceiling becomes milliseconds
    deadlineMs: ceiling_min * 60_000,
    ...(request.signal ? { signal: request.signal } : {}),
    fault: starting.box.gateway.lost,
  };
}

/**
 * The box running for this run: a ready box handed over, or the last start
 * step taken now. Its output is closed if it never runs.
 */
export async function runningBox(
  request: RunRequest,
  starting: Starting,
  parts: BoxParts,
  prompt: CompiledPrompt | undefined,
  output: BoxOutput,
): Promise<BoxHandle> {
  const engine = engineOf(request);
  const ceiling_min = starting.record.ceiling_min ?? 0;
  const env = boxEnv(request, ceiling_min);
  const watch = boxWatch(request, starting, ceiling_min);
  const { stdout: onStdout, stderr: onStderr } = output;
  try {
    if (request.ready) {
      const drive =
        prompt && engine ? { prompt, mode: engine.mode } : { command: commandOf(request.drive) };
      return await handOver(request.paths, request.ready, {
        worker: starting.box.worker.name,
        drive,
        env,
        watch,
        onStdout,
        onStderr,
      });
    }
    const cmd =
      prompt && engine
        ? agentCommand(starting.box.worker, engine.mode, prompt)
        : commandOf(request.drive);
    return await startPrepared(
      starting,
      parts,
      { cmd, env, ...(request.interactive ? { interactive: true } : {}) },
      { ...watch, ...(request.reportOom ? { reportOom: true } : {}), onStdout, onStderr },
    );
  } catch (error) {
    output.close();
    throw error;
  }
}

/** The folders the box writes that outlive it, bounded while it runs (disk-watch.ts). */
export function diskWatch(starting: Starting, home: RunHome, stop: StopFor): DiskWatch {
  const { box } = starting;
  return new DiskWatch({
    folders: [
      ...home.durable,
      ...(box.toolsDir ? [{ path: box.toolsDir, what: "its tools volume" }] : []),
    ],
    limits: box.worker.store,
    onOver: (message) => stop("disk", "disk", message),
  });
}
