import { createWriteStream, type WriteStream } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { outcomesSince } from "../actions/journal.ts";
import { BOX_HOME, RUN_PI } from "../box/layout.ts";
import { type BoxHandle, type BoxOutcome, startBox } from "../box/lifecycle.ts";
import { isTrusted } from "../channels/designations.ts";
import { durationMs } from "../config/duration.ts";
import type { WorkerView } from "../config/load.ts";
import type { RosterPaths } from "../config/paths.ts";
import { errorMessage } from "../errors.ts";
import { mintToken, revokeToken } from "../gateway/identity.ts";
import { buildRunHome } from "../home/build-home.ts";
import { compilePrompt } from "../prompt/compile.ts";
import { budgetStop, describeBudgetStop } from "../runs/budget-stop.ts";
import { type Provisioned, provision } from "../runs/provision.ts";
import {
  type EndedBy,
  listRuns,
  newRunId,
  type RunRecord,
  readRecord,
  runDir,
  writeRecord,
} from "../runs/run-record.ts";
import { StallWatchdog, stallMessage } from "../runs/stall-watchdog.ts";
import { PiRpc, type TurnListener, type TurnResult } from "./pi-rpc.ts";

/**
 * A warm session: one live box running pi in RPC mode for one (worker,
 * channel), fed turn by turn. Messages queue FIFO up to a bound (past it a
 * message is refused at once, never dropped silently); one turn runs at a
 * time. It ends on a quiet spell (idle), its own or a turn's ceiling, the
 * box dying, its gateway going away, or a caller closing it; whatever the
 * cause, the box is killed, the token revoked, the record finished, and every
 * message still waiting is answered with the reason.
 */
export interface SessionSpec {
  paths: RosterPaths;
  worker: string;
  channel: string;
  /** term, discord, slack: which idle window applies, and what the worker is told. */
  provider: string;
  /** How the worker's reply reaches the channel (told to the worker). */
  replyBy: string;
  /** Overrides the [box] idle window for this provider. */
  idleMs?: number;
  /** Messages that may wait behind the one running. */
  queueBound: number;
  note: (text: string) => void;
  env?: NodeJS.ProcessEnv;
}

export interface SessionEnd {
  runId: string;
  endedBy: EndedBy;
  /** Set when the session failed (state failed in its record). */
  error: string | undefined;
  turns: number;
}

/** A message the session could not take or finish; `runId` names the session. */
export class SessionError extends Error {
  override name = "SessionError";
  constructor(
    message: string,
    readonly runId: string,
  ) {
    super(message);
  }
}

interface Queued {
  input: string;
  listener: TurnListener;
  resolve(result: TurnResult): void;
  reject(error: Error): void;
}

export class Session {
  private readonly queue: Queued[] = [];
  private busy = false;
  private endedWith: SessionEnd | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private turnTimer: NodeJS.Timeout | undefined;
  private turns = 0;
  private resolveEnded: (end: SessionEnd) => void = () => undefined;
  /** Settles once, when the session is over and its record finished. */
  readonly ended: Promise<SessionEnd>;
  private finishing: Promise<SessionEnd> | undefined;
  /** Watches each turn for signs of life ([box] stall_after); idle between turns. */
  private readonly watchdog: StallWatchdog | undefined;

  private constructor(
    private readonly spec: SessionSpec,
    private readonly box: Provisioned,
    readonly runId: string,
    private readonly dir: string,
    private record: RunRecord,
    private readonly token: string,
    private readonly rpc: PiRpc,
    private readonly handle: BoxHandle,
    private readonly logs: WriteStream[],
    private readonly idleMs: number,
    homeDir: string,
  ) {
    this.ended = new Promise((resolve) => {
      this.resolveEnded = resolve;
    });
    const stallMs = durationMs(box.worker.box.stall_after);
    this.watchdog =
      stallMs === undefined
        ? undefined
        : new StallWatchdog(
            stallMs,
            homeDir,
            () => void this.end("stalled", stallMessage(stallMs), "failed"),
          );
    void handle.done.then((outcome) => this.boxEnded(outcome));
    this.armIdle();
  }

  get worker(): WorkerView {
    return this.box.worker;
  }

  get containerId(): string {
    return this.handle.containerId;
  }

  /** What status pages show: whose session, which channel, and what waits in it. */
  get summary(): {
    worker: string;
    channel: string;
    runId: string;
    busy: boolean;
    queued: number;
    turns: number;
  } {
    return {
      worker: this.spec.worker,
      channel: this.spec.channel,
      runId: this.runId,
      busy: this.busy,
      queued: this.queue.length,
      turns: this.turns,
    };
  }

  /** Ending or ended: new messages go to a fresh session. */
  get closing(): boolean {
    return this.finishing !== undefined;
  }

  static async open(spec: SessionSpec): Promise<Session> {
    const box = await provision({
      paths: spec.paths,
      worker: spec.worker,
      note: spec.note,
      ...(spec.env ? { env: spec.env } : {}),
    });
    const { paths } = spec;
    const { worker } = box;
    const previous = listRuns(paths.state, worker.name)[0];
    const since = previous ? readRecord(previous.dir)?.started_at : undefined;
    const runId = newRunId();
    const dir = runDir(paths.state, worker.name, runId);
    const ceilingMin = worker.box.session_ceiling_min;
    let record: RunRecord = {
      id: runId,
      worker: worker.name,
      kind: "session",
      state: "running",
      started_at: new Date().toISOString(),
      ceiling_min: ceilingMin,
      container: `roster-box-${runId}`,
      channel_id: spec.channel,
      turns: 0,
      runner_pid: process.pid,
    };
    let token: string | undefined;
    const logs: WriteStream[] = [];
    try {
      await writeRecord(dir, record);
      const trusted = isTrusted(paths, spec.channel);
      const prompt = compilePrompt({
        worker,
        identity: box.identity,
        task: "",
        runId,
        ceilingMinutes: ceilingMin,
        session: { channel: spec.channel, provider: spec.provider, trusted, replyBy: spec.replyBy },
        outcomes: outcomesSince(paths, worker.name, since),
      });
      await mkdir(join(dir, "prompt"), { recursive: true });
      await writeFile(join(dir, "prompt/system.md"), prompt.system);
      const home = await buildRunHome({ paths, worker, runDir: dir, runId, channel: spec.channel });
      if (Object.keys(home.repos.record).length) {
        record = { ...record, repos: home.repos.record };
        await writeRecord(dir, record);
      }
      token = await mintToken(paths.identity, { subject: `org/${worker.name}`, runId });
      const events = createWriteStream(join(dir, "events.jsonl"), { flags: "a" });
      const stderr = createWriteStream(join(dir, "stderr.log"), { flags: "a" });
      logs.push(events, stderr);
      let session: Session | undefined;
      const feed: Buffer[] = [];
      const handle = await startBox(
        box.docker,
        box.boxSpec({
          runId,
          home,
          token,
          cmd: [
            RUN_PI,
            "--mode",
            "rpc",
            "--session-dir",
            `${BOX_HOME}/session`,
            "--append-system-prompt",
            prompt.system,
          ],
          env: { ROSTER_CHANNEL_DIR: `${BOX_HOME}/channel` },
          interactive: true,
        }),
        {
          deadlineMs: ceilingMin * 60_000,
          fault: box.gateway.lost,
          onStdout: (chunk) => {
            events.write(chunk);
            if (session) session.rpc.push(chunk);
            else feed.push(chunk);
          },
          onStderr: (chunk) => {
            session?.activity();
            stderr.write(chunk);
          },
        },
      );
      const stdin = handle.stdin;
      if (!stdin) throw new Error("the box was started without stdin");
      const idleSecs =
        spec.provider === "term" ? worker.box.talk_idle_secs : worker.box.chat_idle_secs;
      const rpc = new PiRpc(stdin, () => session?.activity());
      record = { ...record, container: handle.containerId.slice(0, 12) };
      await writeRecord(dir, record);
      session = new Session(
        spec,
        box,
        runId,
        dir,
        record,
        token,
        rpc,
        handle,
        logs,
        spec.idleMs ?? idleSecs * 1000,
        home.home,
      );
      for (const chunk of feed.splice(0)) rpc.push(chunk);
      return session;
    } catch (error) {
      for (const log of logs) log.end();
      await writeRecord(dir, {
        ...record,
        state: "failed",
        ended_at: new Date().toISOString(),
        ended_by: "error",
        error: errorMessage(error),
      });
      if (token) await revokeToken(paths.identity, token);
      await box.release();
      throw new SessionError(`the session could not start: ${errorMessage(error)}`, runId);
    }
  }

  /** Queues one framed message; settles when its turn is over. */
  submit(input: string, listener: TurnListener = {}): Promise<TurnResult> {
    if (this.closing) return Promise.reject(new SessionError("the session is ending", this.runId));
    if (this.queue.length >= this.spec.queueBound) {
      return Promise.reject(
        new SessionError(
          `${this.queue.length} messages are already waiting for this worker; this one was not queued, send it again later`,
          this.runId,
        ),
      );
    }
    return new Promise<TurnResult>((resolve, reject) => {
      this.queue.push({ input, listener, resolve, reject });
      this.activity();
      this.pump();
    });
  }

  /**
   * Ends the session now (the sender is done, or the host is stopping): a
   * clean end between turns; mid-turn it is an interruption (`signal`), and
   * the turn's sender is told.
   */
  close(): Promise<SessionEnd> {
    if (this.busy || this.queue.length)
      return this.end("signal", "stopped while a turn was running", "failed");
    return this.end("idle");
  }

  private pump(): void {
    if (this.busy || this.closing) return;
    const next = this.queue.shift();
    if (!next) return;
    this.busy = true;
    this.clearIdle();
    const ceilingMin = this.worker.box.turn_ceiling_min;
    this.turnTimer = setTimeout(
      () =>
        void this.end("ceiling", `a turn passed the ${ceilingMin}-minute turn ceiling`, "failed"),
      ceilingMin * 60_000,
    );
    next.listener.onStart?.();
    this.watchdog?.start();
    this.rpc.prompt(next.input, next.listener).then(
      (result) => {
        this.turnDone();
        // a model refused by a used-up budget: the sender is told why, and when it opens again
        const budget = result.modelError
          ? budgetStop(this.spec.paths.audit, this.runId)
          : undefined;
        if (budget)
          next.reject(
            new SessionError(`the worker stopped: ${describeBudgetStop(budget)}`, this.runId),
          );
        else next.resolve(result);
      },
      (error: unknown) => {
        this.turnDone();
        next.reject(
          error instanceof SessionError ? error : new SessionError(errorMessage(error), this.runId),
        );
      },
    );
  }

  private turnDone(): void {
    this.watchdog?.stop();
    this.busy = false;
    this.turns++;
    if (this.turnTimer) clearTimeout(this.turnTimer);
    this.turnTimer = undefined;
    this.armIdle();
    this.pump();
  }

  /** Something happened (a message, a line from pi): the quiet spell starts again. */
  private activity(): void {
    this.watchdog?.activity();
    if (!this.busy) this.armIdle();
  }

  private armIdle(): void {
    this.clearIdle();
    if (this.busy || this.queue.length || this.closing) return;
    this.idleTimer = setTimeout(() => void this.end("idle"), this.idleMs);
  }

  private clearIdle(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }

  private boxEnded(outcome: BoxOutcome): void {
    if (this.closing) return;
    if (outcome.endedBy === "ceiling") {
      const ceiling = this.worker.box.session_ceiling_min;
      const midTurn = this.busy;
      void this.end(
        "ceiling",
        `the session reached its ${ceiling}-minute ceiling${midTurn ? " mid-turn" : ""}`,
        midTurn ? "failed" : "done",
      );
    } else if (outcome.endedBy === "error") {
      void this.end(
        "error",
        `${errorMessage(this.box.gateway.lost.reason)}; the box was stopped`,
        "failed",
      );
    } else {
      void this.end(
        "error",
        `the box exited (code ${outcome.exitCode}) ${this.busy ? "in the middle of a turn" : "between turns"}`,
        "failed",
      );
    }
  }

  private end(
    endedBy: EndedBy,
    error?: string,
    state: "done" | "failed" = error ? "failed" : "done",
  ): Promise<SessionEnd> {
    if (this.finishing) return this.finishing;
    this.finishing = this.finish(endedBy, error, state);
    return this.finishing;
  }

  private async finish(
    endedBy: EndedBy,
    error: string | undefined,
    state: "done" | "failed",
  ): Promise<SessionEnd> {
    this.clearIdle();
    this.watchdog?.stop();
    if (this.turnTimer) clearTimeout(this.turnTimer);
    const reason = error ?? `the session ended (${endedBy})`;
    this.rpc.fail(new SessionError(reason, this.runId));
    for (const waiting of this.queue.splice(0)) {
      waiting.reject(
        new SessionError(
          `the session ended before this message was handled: ${reason}`,
          this.runId,
        ),
      );
    }
    this.handle.stdin?.end();
    // pi keeps its transcript as it goes: nothing is lost by not waiting for it
    await this.handle.kill("signal");
    await this.handle.done;
    await Promise.all(this.logs.map((log) => new Promise((resolve) => log.end(resolve))));
    const repos = await this.box.settleRepos({
      id: this.runId,
      dir: this.dir,
      records: this.record.repos,
    });
    this.record = {
      ...this.record,
      ...(repos ? { repos } : {}),
      state,
      ended_at: new Date().toISOString(),
      ended_by: endedBy,
      turns: this.turns,
      ...(error ? { error } : {}),
    };
    await writeRecord(this.dir, this.record);
    await revokeToken(this.spec.paths.identity, this.token);
    await this.box.release();
    const end: SessionEnd = { runId: this.runId, endedBy, error, turns: this.turns };
    this.endedWith = end;
    this.resolveEnded(end);
    return end;
  }

  /** How it ended, once it has. */
  get outcome(): SessionEnd | undefined {
    return this.endedWith;
  }
}
