import {
  type EndedBy as BoxEndedBy,
  type BoxHandle,
  type BoxOutcome,
  startBox,
} from "../../boundary/box/lifecycle.ts";
import { runDoorDir } from "../../boundary/gateway/door.ts";
import { mintToken, revokeToken } from "../../boundary/gateway/identity.ts";
import { snapshotAfterRun } from "../../boundary/store/passes.ts";
import { durationMs } from "../../ground/config/duration.ts";
import type { WorkerView } from "../../ground/config/load.ts";
import { parseMemory } from "../../ground/config/memory.ts";
import { workerSubject } from "../../ground/config/subject.ts";
import { errorMessage } from "../../ground/errors.ts";
import { finished, type RunRecord, writeRecord } from "../../records/run-records/run-record.ts";
import { buildRunHome } from "../home/build-home.ts";
import type { CompiledPrompt } from "../prompt/compile.ts";
import { BoxOutput } from "./box-output.ts";
import { type BudgetStop, budgetStop } from "./budget-stop.ts";
import { DiskWatch } from "./disk-watch.ts";
import { piCommand, writePrompt } from "./engine-prompt.ts";
import { handOver, takeOver } from "./hand-off.ts";
import { type Provisioned, provision } from "./provision.ts";
import { writeRunContext } from "./run-context.ts";
import type { LimitReached, RunEnding, RunRequest } from "./run-request.ts";
import {
  assertCeiling,
  commandOf,
  engineOf,
  firstRecord,
  type Starting,
  writeStartRecord,
} from "./run-start.ts";
import { StallWatchdog, stallMessage } from "./stall-watchdog.ts";

/**
 * The one owner of a run, whatever its kind — a one-shot run, a queued task,
 * a warm session, a `box exec` command. Everything between provisioning and
 * release happens here and only here: the record, the compiled prompt, the
 * run's $HOME, minting and revoking its token, the box spec, starting the box,
 * every limit (the wall-clock ceiling, a session's turn ceiling, the stall
 * watch, the budget stop) and settling it (repos, record, token, gateway).
 * Callers say only how the engine is driven and what its output means to them.
 */
export type { EngineDrive } from "./engine-prompt.ts";
export type { LimitReached, RunEnding, RunKind, RunRequest } from "./run-request.ts";

/** The run a start failed in, once its record existed (undefined: refused before any record). */
const failedRuns = new WeakMap<object, string>();
export function failedRunId(error: unknown): string | undefined {
  return typeof error === "object" && error ? failedRuns.get(error) : undefined;
}

export class Run {
  private turnTimer: NodeJS.Timeout | undefined;
  private disk: DiskWatch | undefined;
  private settling: Promise<RunRecord> | undefined;
  /** The limit the owner stopped the box for, in the words the record and a sender get. */
  private limit: LimitReached | undefined;

  private constructor(
    private readonly request: RunRequest,
    private readonly box: Provisioned,
    readonly id: string,
    readonly dir: string,
    private current: RunRecord,
    private readonly token: string,
    private readonly output: BoxOutput,
    private readonly watchdog: StallWatchdog | undefined,
    private readonly handle: BoxHandle,
    /** What the engine was told when it started (a session's system prompt stays this). */
    readonly prompt: CompiledPrompt | undefined,
  ) {}

  /**
   * Provisions, records, compiles, builds $HOME, mints the token and starts
   * the box; returns once it runs. A failure after the record exists finishes
   * the record with the cause and gives everything back before it is thrown.
   */
  static async start(asked: RunRequest): Promise<Run> {
    if (asked.ceiling_min !== undefined) assertCeiling(asked.ceiling_min);
    const request = await takeOver(asked);
    const { ready } = request;
    const box =
      ready?.box ??
      (await provision({
        paths: request.paths,
        worker: request.worker,
        note: request.note,
        model: engineOf(request) !== undefined,
        ...(request.env ? { env: request.env } : {}),
      }));
    const starting = firstRecord(request, box.worker, ready?.id);
    try {
      assertCeiling(starting.record.ceiling_min ?? 0);
      await writeStartRecord(request, starting);
      await writeRunContext(request.paths, starting.dir, starting.record);
      await request.onRecord?.(starting.record);
      return await Run.launch(request, box, starting);
    } catch (error) {
      if (starting.record.state === "running")
        await writeRecord(
          starting.dir,
          finished(starting.record, "error", undefined, errorMessage(error)),
        ).catch(() => undefined);
      // a ready box that could not take the run serves no other: its token and door go too
      if (ready) {
        await ready.handle.kill("error");
        await ready.handle.done;
        starting.token = ready.token;
        starting.door = true;
      }
      if (starting.token) await revokeToken(request.paths.identity, starting.token);
      if (starting.door) await box.gateway.closeDoor(starting.id).catch(() => undefined);
      await box.release();
      if (typeof error === "object" && error) failedRuns.set(error, starting.id);
      throw error;
    }
  }

  /** From a written record to a running box: prompt, $HOME, token, logs, limits, the box. */
  private static async launch(
    request: RunRequest,
    box: Provisioned,
    starting: Starting,
  ): Promise<Run> {
    const { paths } = request;
    const { worker } = box;
    const { id, dir } = starting;
    const engine = engineOf(request);
    const ceiling_min = starting.record.ceiling_min ?? 0;
    const prompt = engine
      ? await writePrompt(dir, engine, { worker, identity: box.identity, id, paths, ceiling_min })
      : undefined;
    const { ready } = request;
    const home =
      ready?.home ??
      (await buildRunHome({
        paths,
        worker,
        runDir: dir,
        runId: id,
        ...(engine?.session ? { channel: engine.session.channel } : {}),
      }));
    if (Object.keys(home.repos.record).length) {
      starting.record = { ...starting.record, repos: home.repos.record };
      await writeRecord(dir, starting.record);
    }
    // a ready box's token was bound and its door opened when it was taken over
    const token =
      ready?.token ??
      (await mintToken(paths.identity, { subject: workerSubject(worker.name), runId: id }));
    starting.token = token;
    // a door of its own: the gateway knows which box a connection comes from before it
    // reads a byte, and bounds what one box can hold there (asked once the token is live)
    const door = ready ? runDoorDir(box.gateway.door, id) : await box.gateway.openDoor(id);
    starting.door = true;
    const stallMs = request.stall === "none" ? undefined : durationMs(worker.box.stall_after);
    let run: Run | undefined;
    const watchdog =
      stallMs === undefined
        ? undefined
        : new StallWatchdog(
            stallMs,
            home.home,
            () => void run?.stopFor("stall", "stalled", stallMessage(stallMs)),
          );
    const env = {
      // one-shot and task runs only, as the box contract has it; never sessions
      ...(request.kind === "box" || request.kind === "task"
        ? { ROSTER_CEILING_MIN: String(ceiling_min) }
        : {}),
      ...(engine?.taskId ? { ROSTER_TASK_ID: engine.taskId } : {}),
      ...request.boxEnv,
    };
    const watch = {
      // the one place the ceiling becomes milliseconds
      deadlineMs: ceiling_min * 60_000,
      ...(request.signal ? { signal: request.signal } : {}),
      fault: box.gateway.lost,
    };
    // every byte the box writes is read through its bounds (box-output.ts), logged for an engine run
    const output = new BoxOutput({
      logDir: engine ? dir : undefined,
      maxBytes: parseMemory(worker.box.max_output),
      ...(request.onLine ? { onLine: request.onLine } : {}),
      ...(request.onStdout ? { onStdout: request.onStdout } : {}),
      ...(request.onStderr ? { onStderr: request.onStderr } : {}),
      activity: () => watchdog?.activity(),
      onOver: (message) => run?.stopFor("output", "output", message),
    });
    const { stdout: onStdout, stderr: onStderr } = output;
    let handle: BoxHandle;
    try {
      if (ready) {
        handle = await handOver(paths, ready, {
          worker: worker.name,
          drive:
            prompt && engine
              ? { prompt, mode: engine.mode }
              : { command: commandOf(request.drive) },
          env,
          watch,
          onStdout,
          onStderr,
        });
      } else {
        const spec = box.boxSpec({
          runId: id,
          home,
          token,
          door,
          cmd: prompt && engine ? piCommand(engine.mode, prompt) : commandOf(request.drive),
          env,
          ...(request.interactive ? { interactive: true } : {}),
        });
        handle = await startBox(box.engine, spec, {
          ...watch,
          ...(request.reportOom ? { reportOom: true } : {}),
          onStdout,
          onStderr,
        });
      }
    } catch (error) {
      output.close();
      throw error;
    }
    // stdout's last line without its "\n" counts before anyone waiting on the box hears of its end
    void handle.done.then(() => output.flush());
    run = new Run(request, box, id, dir, starting.record, token, output, watchdog, handle, prompt);
    // a bound passed before the run object existed stops the box now
    if (output.overReason) run.stopFor("output", "output", output.overReason);
    if (request.stall === "box") watchdog?.start();
    // the folders it writes that outlive it, bounded while it runs (disk-watch.ts)
    run.disk = new DiskWatch({
      folders: [
        ...home.durable,
        ...(box.toolsDir ? [{ path: box.toolsDir, what: "its tools volume" }] : []),
      ],
      limits: worker.store,
      onOver: (message) => run?.stopFor("disk", "disk", message),
    });
    await run.disk.start();
    return run;
  }

  get worker(): WorkerView {
    return this.box.worker;
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
        message: this.box.gateway.lost.aborted
          ? `${errorMessage(this.box.gateway.lost.reason)} during the run; the box was stopped`
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
   * finished, the token revoked and the gateway given back.
   */
  settle(ending: RunEnding): Promise<RunRecord> {
    this.settling ??= this.finish(ending);
    return this.settling;
  }

  private async finish(ending: RunEnding): Promise<RunRecord> {
    this.endTurn();
    this.disk?.stop();
    try {
      // pi keeps its transcript as it goes: nothing is lost by not waiting for it
      await this.handle.kill("signal");
      await this.handle.done;
      this.output.close();
      const repos = await this.box.settleRepos({
        id: this.id,
        dir: this.dir,
        records: this.current.repos,
      });
      // the store as the run left it, before the record says it ended
      await snapshotAfterRun({
        paths: this.request.paths,
        worker: this.worker.name,
        run: this.id,
        runDir: this.dir,
        channel: this.current.channel_id,
        note: this.request.note,
        maxBytes: this.worker.store.maxBytes,
        reserve: this.worker.store.reserve,
      });
      let record = finished(
        { ...this.current, ...(repos ? { repos } : {}) },
        ending.endedBy,
        ending.exitCode,
        ending.error,
      );
      if (ending.state) record = { ...record, state: ending.state };
      if (ending.turns !== undefined) record = { ...record, turns: ending.turns };
      this.current = record;
      await writeRecord(this.dir, record);
      // a session's channel may have heard from more people since it began
      await writeRunContext(this.request.paths, this.dir, record).catch(() => undefined);
      return record;
    } finally {
      await revokeToken(this.request.paths.identity, this.token);
      // the box is gone: its door goes too (a gateway that went away took it already)
      await this.box.gateway.closeDoor(this.id).catch(() => undefined);
      await this.box.release();
    }
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
