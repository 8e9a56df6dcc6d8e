import { setTimeout as sleep } from "node:timers/promises";
import type { BoxSpec } from "./container-spec.ts";
import type { BoxEngine, EngineBox } from "./engine.ts";
import { requireRuntime } from "./runtime-check.ts";

/** How many more times (100 ms apart) a 137 exit asks the engine whether it was an OOM kill. */
const OOM_EVENT_ASKS = 10;
/**
 * One box from start to removal: create, attach, start, wait for exit (or a
 * deadline, an abort, a fault in something the box depends on, or the
 * caller's own kill), then remove. Output is streamed as it comes. The first
 * reason to end it wins. A one-shot run waits for the end (runBox); a warm
 * session keeps the handle and writes to the box's stdin (startContainer).
 */
/**
 * `stalled`: the caller's activity watchdog found no sign of life for its window.
 * `disk`: its store grew past its limit, or the host's disk past its reserve.
 * `output`: it wrote past a bound on what the host reads from it (runs/box-output.ts).
 */
export type EndedBy = "exit" | "ceiling" | "signal" | "error" | "stalled" | "disk" | "output";

export interface BoxOutcome {
  exitCode: number;
  endedBy: EndedBy;
  containerId: string;
  /** The kernel's OOM killer ended it (asked only with `reportOom`). */
  oomKilled?: boolean;
  /**
   * The engine can't say whether the OOM killer ended it (Podman; gVisor when
   * the kill went unreported): a SIGKILL roster did not send is taken for one,
   * and this says it is not confirmed.
   */
  oomUnconfirmed?: boolean;
}

export interface RunBoxOptions {
  onStdout?: (chunk: Buffer) => void;
  onStderr?: (chunk: Buffer) => void;
  /** Kill the box after this many milliseconds (the wall-clock ceiling). */
  deadlineMs?: number;
  /** Kill the box when aborted (Ctrl-C, SIGTERM). */
  signal?: AbortSignal;
  /**
   * Kill the box when aborted because the run can no longer be governed (its
   * gateway died): a box must never run on without its one door. Ends "error".
   */
  fault?: AbortSignal;
  /** Ask the engine, before removing the box, whether the OOM killer ended it. */
  reportOom?: boolean;
}

/** What ends a box besides its own exit: a deadline, an abort, a fault. */
export type BoxWatch = Pick<RunBoxOptions, "deadlineMs" | "signal" | "fault">;

export interface BoxHandle {
  containerId: string;
  /**
   * Arms what ends the box (the ceiling, Ctrl-C, a lost gateway) from now on:
   * a ready box, started before its run, is armed when it is handed one.
   */
  arm(watch: BoxWatch): void;
  /** The box's stdin (interactive specs only): closing it ends pi's RPC loop. */
  stdin: NodeJS.WritableStream | undefined;
  /** Kills the box for this reason (the first reason given is the one reported). */
  kill(reason: EndedBy): Promise<void>;
  /** Settles once the box has exited and been removed; never rejects. */
  done: Promise<BoxOutcome>;
}

export async function runBox(
  engine: BoxEngine,
  spec: BoxSpec,
  options: RunBoxOptions = {},
): Promise<BoxOutcome> {
  const box = await startContainer(engine, spec, options);
  return box.done;
}

/** Starts the box and returns once it runs; rejects (and removes it) if it can't start. */
export async function startContainer(
  engine: BoxEngine,
  spec: BoxSpec,
  options: RunBoxOptions = {},
): Promise<BoxHandle> {
  // fail closed: a runtime the engine lacks is refused here, before any container exists
  await requireRuntime(engine, spec.runtime);
  const container = await engine.createBox(spec);
  const remove = () => removeContainer(container);
  const ends = boxEnds(container);
  const { arm, kill, unwatch } = ends;

  let stream: NodeJS.ReadWriteStream;
  try {
    stream = await container.attach({
      interactive: spec.interactive ?? false,
      onStdout: (chunk) => options.onStdout?.(chunk),
      onStderr: (chunk) => options.onStderr?.(chunk),
    });
    await container.start();
    // armed once it runs: an abort that came while the container was being created finds it here
    arm(options);
  } catch (error) {
    unwatch();
    await remove();
    throw error;
  }

  const streamEnded = new Promise<void>((resolve) => {
    stream.on("end", resolve);
    stream.on("close", resolve);
  });
  const done = (async (): Promise<BoxOutcome> => {
    try {
      const exitCode = await container.wait();
      await trailingOutput(streamEnded);
      const outcome: BoxOutcome = {
        exitCode,
        endedBy: ends.endedBy(),
        containerId: container.id,
      };
      // the OOM killer's SIGKILL shows as 137: only then is the engine asked
      if (options.reportOom && outcome.exitCode === 137) {
        const oom = await askOomKilled(container, spec.runtime);
        outcome.oomKilled = oom ?? ends.endedBy() === "exit";
        if (oom === undefined && outcome.oomKilled) outcome.oomUnconfirmed = true;
      }
      return outcome;
    } catch {
      // the engine lost the container (or its connection): count it as an error end
      ends.lost();
      return { exitCode: 1, endedBy: ends.endedBy(), containerId: container.id };
    } finally {
      unwatch();
      await remove();
    }
  })();
  return {
    containerId: container.id,
    arm,
    stdin: spec.interactive ? stream : undefined,
    kill,
    done,
  };
}

/**
 * What ends a box besides its own exit — a deadline, an abort, a fault, the
 * caller's kill — and the first reason given, which is the one reported.
 */
function boxEnds(container: EngineBox) {
  let endedBy: EndedBy = "exit";
  const kill = async (reason: EndedBy) => {
    if (endedBy !== "exit") return;
    endedBy = reason;
    await container.kill();
  };
  const onAbort = () => void kill("signal");
  const onFault = () => void kill("error");
  const timers: NodeJS.Timeout[] = [];
  const watched: BoxWatch[] = [];
  const arm = (watch: BoxWatch) => {
    watched.push(watch);
    if (watch.deadlineMs !== undefined)
      timers.push(setTimeout(() => void kill("ceiling"), watch.deadlineMs));
    watch.signal?.addEventListener("abort", onAbort, { once: true });
    watch.fault?.addEventListener("abort", onFault, { once: true });
    // an abort that came before it was armed ends it now
    if (watch.signal?.aborted) void kill("signal");
    if (watch.fault?.aborted) void kill("error");
  };
  const unwatch = () => {
    for (const timer of timers) clearTimeout(timer);
    for (const watch of watched) {
      watch.signal?.removeEventListener("abort", onAbort);
      watch.fault?.removeEventListener("abort", onFault);
    }
  };
  return {
    arm,
    kill,
    unwatch,
    endedBy: (): EndedBy => endedBy,
    /** The engine lost the box: an error end, unless something had already ended it. */
    lost: () => {
      if (endedBy === "exit") endedBy = "error";
    },
  };
}

/**
 * The last output may trail the exit a little: waits for the stream's end, at
 * most 2 s — and clears that wait, or it alone holds the process for its full length.
 */
async function trailingOutput(streamEnded: Promise<void>): Promise<void> {
  let grace: NodeJS.Timeout | undefined;
  await Promise.race([
    streamEnded,
    new Promise((resolve) => {
      grace = setTimeout(resolve, 2000);
    }),
  ]);
  clearTimeout(grace);
}

/** Whether the OOM killer ended the box; undefined when the engine can't say. */
async function askOomKilled(
  container: EngineBox,
  runtime: string | undefined,
): Promise<boolean | undefined> {
  let oom = await container.oomKilled();
  // the engine learns of an OOM kill from an event of its own, which can trail the
  // exit under load (seen on Docker with two boxes ending at once): asked again, briefly
  for (let asked = 0; oom === false && asked < OOM_EVENT_ASKS; asked++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    oom = await container.oomKilled();
  }
  // under gVisor the engine sometimes never hears of the kill at all (about one
  // in five here, probed for 18 s): its "no" is only "not known"
  if (oom === false && runtime === "runsc") return undefined;
  return oom;
}

/** How long a run waits for the engine to finish removing its box before giving up on it. */
const REMOVAL_WAIT_MS = 15_000;

/**
 * Removes a box and returns once the engine no longer lists it. A removal can
 * fail on a loaded host (a mount still busy) or still be in progress when
 * DELETE answers; a run that ended must not leave its box behind, so it asks
 * again until the container is gone, for a bounded time. What is still there
 * after that is the orphan sweep's.
 */
async function removeContainer(container: EngineBox): Promise<void> {
  const deadline = Date.now() + REMOVAL_WAIT_MS;
  for (let delay = 100; ; delay = Math.min(delay * 2, 1000)) {
    await container.remove();
    const gone = !(await container.exists());
    if (gone || Date.now() + delay > deadline) return;
    await sleep(delay);
  }
}
