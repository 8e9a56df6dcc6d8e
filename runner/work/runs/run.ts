import type { EndedBy as BoxEndedBy, BoxHandle, BoxOutcome } from "../../boundary/box/lifecycle.ts";
import { revokeToken } from "../../boundary/gateway/doors/identity.ts";
import { holdSettling, waitForSnapshots } from "../../boundary/store/settle-lock.ts";
import type { WorkerView } from "../../ground/config/worker-view.ts";
import { errorMessage } from "../../ground/errors.ts";
import { pendingRecord } from "../../records/run-records/pending-end.ts";
import { finished, type RunRecord, writeRecord } from "../../records/run-records/run-record.ts";
import { assertNotPaused } from "../../records/workers/pause.ts";
import type { CompiledPrompt } from "../prompt/compile.ts";
import { finishBookkeeping } from "./bookkeeping.ts";
import type { BoxOutput } from "./box-output.ts";
import { type BudgetStop, budgetStop } from "./budget-stop.ts";
import type { DiskWatch } from "./disk-watch.ts";
import { writePrompt } from "./engine-prompt.ts";
import { takeOver } from "./hand-off.ts";
import { writeRunContext } from "./run-context.ts";
import type { LimitReached, RunEnding, RunRequest } from "./run-request.ts";
import { RunTrace } from "./run-trace.ts";
import { markedRecord } from "./sentinel-mark.ts";
import type { StallWatchdog } from "./stall-watchdog.ts";
import { assertCeiling, provision } from "./start-1-provision.ts";
import { engineOf, firstRecord, type Starting, writeStartRecord } from "./start-2-record.ts";
import {
  boxOutput,
  boxParts,
  diskWatch,
  recordRepos,
  runningBox,
  type StopFor,
  stallWatch,
} from "./start-3-launch.ts";
import { type BoxStart, teardown } from "./start-4-box.ts";

/**
 * The one owner of a run, whatever its kind — a one-shot run, a queued task,
 * a warm session, a `box exec` command. Everything between provisioning and
 * release happens here and only here: the record, the compiled prompt, the
 * run's $HOME, minting and revoking its token, the box spec, starting the box,
 * every limit (the wall-clock ceiling, a session's turn ceiling, the stall
 * watch, the budget stop) and settling it (repos, record, token, gateway).
 * A start reads in the order it happens (Run.start, then Run.launch), one file
 * a phase: start-1-provision.ts (the worker, the image, the gateway: what
 * every box needs), start-2-record.ts (the first record, under the store's
 * start lock), start-3-launch.ts (prompt, limits, output, the running box) and
 * start-4-box.ts (the box's $HOME, token, door and container, and the one
 * teardown; a ready box takes phases 1 and 4 before its run and is paused
 * there). Callers say only how the engine is driven and what its output means
 * to them.
 */
export type { EngineDrive } from "./engine-prompt.ts";
export type { LimitReached, RunEnding, RunKind, RunRequest } from "./run-request.ts";

/** The request with its trace: pi's events read into spans, and the box told its traceparent. */
function withTrace(request: RunRequest, trace: RunTrace): RunRequest {
  const onLine = request.onLine;
  return {
    ...request,
    onLine: (line: string) => {
      trace.line(line);
      onLine?.(line);
    },
    boxEnv: { ...request.boxEnv, TRACEPARENT: trace.traceparent },
  };
}

/** The run a start failed in, once its record existed (undefined: refused before any record). */
const failedRuns = new WeakMap<object, string>();
export function failedRunId(error: unknown): string | undefined {
  return typeof error === "object" && error ? failedRuns.get(error) : undefined;
}

export class Run {
  private turnTimer: NodeJS.Timeout | undefined;
  private disk: DiskWatch | undefined;
  /** The run's end, once asked for: its answer, and its settling (the answer, then the bookkeeping). */
  private ended: { answered: Promise<RunRecord>; settled: Promise<RunRecord> } | undefined;
  /** The limit the owner stopped the box for, in the words the record and a sender get. */
  private limit: LimitReached | undefined;
  /** The run as a trace, when telemetry exports one (run-trace.ts). */
  private trace: RunTrace | undefined;
  readonly id: string;
  readonly dir: string;

  private constructor(
    private readonly request: RunRequest,
    /** What its teardown gives back: token, door, the box, the gateway. */
    private readonly held: BoxStart,
    private current: RunRecord,
    private readonly output: BoxOutput,
    private readonly watchdog: StallWatchdog | undefined,
    private readonly handle: BoxHandle,
    /** What the engine was told when it started (a session's system prompt stays this). */
    readonly prompt: CompiledPrompt | undefined,
  ) {
    this.id = held.id;
    this.dir = held.dir;
  }

  /**
   * Provisions, records, compiles, builds $HOME, mints the token and starts
   * the box; returns once it runs. A failure after the record exists finishes
   * the record with the cause and gives everything back before it is thrown.
   */
  static async start(asked: RunRequest): Promise<Run> {
    if (asked.ceiling_min !== undefined) assertCeiling(asked.ceiling_min);
    try {
      assertNotPaused(asked.paths, asked.worker);
    } catch (error) {
      await asked.ready?.discard("its worker is paused").catch(() => undefined);
      throw error;
    }
    const request = await takeOver(asked);
    // a ready box was provisioned when it was made
    const box =
      request.ready?.box ??
      (await provision({
        paths: request.paths,
        worker: request.worker,
        note: request.note,
        model: engineOf(request) !== undefined,
        ...(request.env ? { env: request.env } : {}),
      }));
    const starting = firstRecord(request, box);
    const trace = await RunTrace.start(box.config.org.telemetry?.otlp_endpoint, starting.record);
    const traced = trace ? withTrace(request, trace) : request;
    try {
      assertCeiling(starting.record.ceiling_min ?? 0);
      // the worker's runs before this one have answered, their snapshots may not be taken yet:
      // this box starts on a store they have taken (store/settle-lock.ts)
      const snapshotsTaken = waitForSnapshots(request.paths, box.worker.name, {
        signal: request.signal,
        onWait: () =>
          request.note(
            `${box.worker.name}'s last run is taking its store snapshot: the run starts once it is taken`,
          ),
      });
      snapshotsTaken.catch(() => undefined);
      await writeStartRecord(request, starting);
      await writeRunContext(request.paths, starting.dir, starting.record);
      await request.onRecord?.(starting.record);
      await snapshotsTaken;
      const run = await Run.launch(traced, starting);
      run.trace = trace;
      return run;
    } catch (error) {
      if (starting.record.state === "running")
        await writeRecord(
          starting.dir,
          finished(starting.record, "error", undefined, errorMessage(error)),
        ).catch(() => undefined);
      // whatever the start got to goes back: a ready box that could not take the run serves no other
      await teardown(request.paths, starting, { kill: "error" });
      await trace?.end(finished(starting.record, "error", undefined, errorMessage(error)));
      if (typeof error === "object" && error) failedRuns.set(error, starting.id);
      throw error;
    }
  }

  /** From a written record to a running box (start-3-launch.ts): prompt, $HOME, token, door, limits, the box. */
  private static async launch(request: RunRequest, starting: Starting): Promise<Run> {
    const { box, id, dir } = starting;
    const engine = engineOf(request);
    const ceiling_min = starting.record.ceiling_min ?? 0;
    const prompt = engine
      ? await writePrompt(dir, engine, {
          worker: box.worker,
          identity: box.identity,
          id,
          paths: request.paths,
          ceiling_min,
        })
      : undefined;
    const parts = await boxParts(request, starting);
    await recordRepos(starting, parts.home);
    // a limit is met through the run, which exists only once its box runs
    let run: Run | undefined;
    const stop: StopFor = (limit, endedBy, message) => run?.stopFor(limit, endedBy, message);
    const watchdog = stallWatch(request, starting, parts.home, stop);
    const output = boxOutput(request, starting, watchdog, stop);
    const handle = await runningBox(request, starting, parts, prompt, output);
    // stdout's last line without its "\n" counts before anyone waiting on the box hears of its end
    void handle.done.then(() => output.flush());
    run = new Run(request, starting, starting.record, output, watchdog, handle, prompt);
    // a bound passed before the run object existed stops the box now
    if (output.overReason) run.stopFor("output", "output", output.overReason);
    if (request.stall === "box") watchdog?.start();
    run.disk = diskWatch(starting, parts.home, stop);
    await run.disk.start();
    return run;
  }

  get worker(): WorkerView {
    return this.held.box.worker;
  }

  get record(): RunRecord {
    return this.current;
  }

  get containerId(): string {
    return this.handle.containerId;
  }

  /** The box's stdin (interactive runs only). */
  get stdin(): NodeJS.WritableStream | undefined {
    return this.handle.stdin;
  }

  /** Settles once the box has exited and been removed; never rejects. */
  get done(): Promise<BoxOutcome> {
    return this.handle.done;
  }

  /** A sign of life from the engine that its output does not show (a session's RPC). */
  activity(): void {
    this.watchdog?.activity();
  }

  /** A session's turn begins: its turn ceiling and the stall watch run until endTurn. */
  beginTurn(): void {
    const minutes = this.worker.box.turn_ceiling_min;
    this.clearTurn();
    this.turnTimer = setTimeout(
      () =>
        void this.stopFor(
          "turn-ceiling",
          "ceiling",
          `a turn passed the ${minutes}-minute turn ceiling`,
        ),
      minutes * 60_000,
    );
    this.watchdog?.start();
  }

  endTurn(): void {
    this.clearTurn();
    this.watchdog?.stop();
  }

  /**
   * Why the box ended, in the words the record and a sender get: a limit
   * the owner stopped it for, the wall-clock ceiling, or the gateway going
   * away. Undefined for an exit of its own or an interruption.
   */
  limitReached(outcome: BoxOutcome): LimitReached | undefined {
    if (this.limit) return this.limit;
    const ceiling = this.current.ceiling_min;
    if (outcome.endedBy === "ceiling")
      return {
        endedBy: "ceiling",
        limit: "ceiling",
        message:
          this.current.kind === "session"
            ? `the session reached its ${ceiling}-minute ceiling`
            : `killed at the ${ceiling}-minute ceiling`,
      };
    if (outcome.endedBy === "error")
      return {
        endedBy: "error",
        limit: "gateway",
        message: this.held.box.gateway.lost.aborted
          ? `${errorMessage(this.held.box.gateway.lost.reason)} during the run; the box was stopped`
          : "the container engine lost the box before it exited",
      };
    return undefined;
  }

  /** After the model was refused: did a used-up budget stop it (the gateway's audit says)? */
  budgetStop(): BudgetStop | undefined {
    return budgetStop(this.request.paths.audit, this.id);
  }

  /**
   * Ends the run for good, once (later calls get the same record): the box is
   * killed if it still runs, its logs closed, its repos settled, the record
   * held as pending, the store snapshot taken, the record finished, the token
   * revoked and the gateway given back.
   */
  settle(ending: RunEnding): Promise<RunRecord> {
    return this.end(ending).settled;
  }

  /**
   * Settles the run (as settle) and resolves as soon as its answer is final:
   * the box is gone, its repos settled and its record written finished, its
   * store snapshot still `pending` (taken next, then the record's last write).
   */
  answer(ending: RunEnding): Promise<RunRecord> {
    return this.end(ending).answered;
  }

  private end(ending: RunEnding): { answered: Promise<RunRecord>; settled: Promise<RunRecord> } {
    if (!this.ended) {
      let tell: (record: RunRecord) => void = () => undefined;
      const answered = new Promise<RunRecord>((resolve) => {
        tell = resolve;
      });
      const settled = this.finish(ending, (record) => tell(record));
      // a settling that fails before the answer is the answer's failure too
      this.ended = { answered: Promise.race([answered, settled]), settled };
    }
    return this.ended;
  }

  private async finish(
    ending: RunEnding,
    answered: (record: RunRecord) => void,
  ): Promise<RunRecord> {
    this.endTurn();
    this.disk?.stop();
    // pi keeps its transcript as it goes: nothing is lost by not waiting for it
    return teardown(this.request.paths, this.held, { kill: "signal" }, async () => {
      this.output.close();
      // from the answer to the record's last write the worker's next run waits (store/settle-lock.ts);
      // taken while the repos settle (it never rejects)
      const holding = holdSettling(this.request.paths, this.worker.name, this.request.note);
      let record: RunRecord;
      try {
        const repos = await this.held.box.settleRepos({
          id: this.id,
          dir: this.dir,
          records: this.current.repos,
        });
        let ended = finished(
          { ...this.current, ...(repos ? { repos } : {}) },
          ending.endedBy,
          ending.exitCode,
          ending.error,
        );
        if (ending.state) ended = { ...ended, state: ending.state };
        if (ending.turns !== undefined) ended = { ...ended, turns: ending.turns };
        // the gateway's mark if the box tripped the sentinel wire (audit/tripwire.ts)
        ended = markedRecord(this.request.paths.audit, ended);
        await holding;
        // written before the answer goes out: a server that dies now is finished by its next start
        const pending = pendingRecord(ended, {
          max_bytes: this.worker.store.maxBytes,
          reserve: this.worker.store.reserve,
        });
        this.current = pending;
        await writeRecord(this.dir, pending);
        // the box is gone: the run's authority ends with its answer, not after the bookkeeping
        if (this.held.token) await revokeToken(this.request.paths.identity, this.held.token);
        answered(pending);
        // the store as the run left it, before the record says it ended
        record = await finishBookkeeping(this.request.paths, this.dir, pending, this.request.note);
        this.current = record;
      } finally {
        await (await holding)();
      }
      // a session's channel may have heard from more people since it began
      await writeRunContext(this.request.paths, this.dir, record).catch(() => undefined);
      await this.trace?.end(record);
      return record;
    });
  }

  private stopFor(limit: LimitReached["limit"], endedBy: BoxEndedBy, message: string): void {
    this.limit ??= { endedBy, limit, message };
    this.endTurn();
    void this.handle.kill(endedBy);
  }

  private clearTurn(): void {
    if (this.turnTimer) clearTimeout(this.turnTimer);
    this.turnTimer = undefined;
  }
}
