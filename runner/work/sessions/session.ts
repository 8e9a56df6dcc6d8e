import { BOX_HOME } from "../../boundary/box/layout.ts";
import type { BoxOutcome } from "../../boundary/box/lifecycle.ts";
import { chatPlatforms } from "../../ground/chat/terms.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import type { WorkerView } from "../../ground/config/worker-view.ts";
import { errorMessage } from "../../ground/errors.ts";
import { isTrusted } from "../../records/channels/designations.ts";
import type { EndedBy } from "../../records/run-records/run-record.ts";
import { readMemory } from "../memory/read.ts";
import { memoryTurnBlock } from "../prompt/memory.ts";
import { recordTurn } from "../prompt/turn-record.ts";
import type { AheadClones } from "../repos/clone.ts";
import { runAgent } from "../runs/agent-command.ts";
import { describeBudgetStop } from "../runs/budget-stop.ts";
import { codexThread } from "../runs/codex-command.ts";
import { failedRunId, Run } from "../runs/run.ts";
import type { ReadyStart } from "../runs/run-request.ts";
import { CodexAppServer } from "./codex-app-server.ts";
import {
  CLAUDE_WRITER,
  PI_WRITER,
  PiRpc,
  type TurnListener,
  type TurnResult,
  type TurnWriter,
} from "./pi-rpc.ts";
import { PurposeWatch } from "./purpose-watch.ts";

/**
 * A warm session: one live box running the worker's agent in its streaming
 * mode (pi's RPC, Claude Code's stream JSON, Codex's app-server) for one
 * (worker, channel), fed turn by turn; the first turn opens with the worker's memory
 * notes as they stood when the box started (prompt/memory.ts). Messages
 * queue FIFO up to a bound (past it a message is refused at once, never
 * dropped silently); one turn runs at a time. It ends on a quiet spell (idle), its own or a turn's ceiling, the
 * box dying, its gateway going away, or a caller closing it; whatever the
 * cause, the box is killed, the token revoked, the record finished, and every
 * message still waiting is answered with the reason.
 */
export interface SessionSpec {
  paths: RosterPaths;
  worker: string;
  channel: string;
  /** The chat platform's name: its terms say which idle window applies (talk's or chat's). */
  provider: string;
  /** How the worker's reply reaches the channel (told to the worker). */
  replyBy: string;
  /** Overrides the [box] idle window for this provider. */
  idleMs?: number;
  /** Messages that may wait behind the one running. */
  queueBound: number;
  note: (text: string) => void;
  env?: NodeJS.ProcessEnv;
  /** A server's ready box made for this channel, taken over instead of starting one. */
  ready?: ReadyStart;
  /** A server's clones made ahead of their runs (repos/spare-clones.ts). */
  spares?: AheadClones;
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
  private turns = 0;
  private resolveEnded: (end: SessionEnd) => void = () => undefined;
  /** Settles once, when the session is over and its record finished. */
  readonly ended: Promise<SessionEnd>;
  private finishing: Promise<SessionEnd> | undefined;
  /** The channel's purpose as the worker last heard it: a change heads the next turn. */
  private readonly purpose: PurposeWatch;

  private constructor(
    private readonly spec: SessionSpec,
    /** The run owner: the box, its ceilings, the stall watch per turn, the record. */
    private readonly run: Run,
    private readonly rpc: PiRpc,
    private readonly idleMs: number,
    /** The worker's memory notes as the session opened: the head of its first turn, then gone. */
    private memoryHead: string | undefined,
  ) {
    this.ended = new Promise((resolve) => {
      this.resolveEnded = resolve;
    });
    void run.done.then((outcome) => this.boxEnded(outcome));
    this.purpose = new PurposeWatch(
      spec.paths,
      spec.channel,
      run.prompt?.purpose,
      run.worker.context.purpose_max_chars,
    );
    this.armIdle();
  }

  get runId(): string {
    return this.run.id;
  }

  get worker(): WorkerView {
    return this.run.worker;
  }

  get containerId(): string {
    return this.run.containerId;
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
    let session: Session | undefined;
    const feed: string[] = [];
    let run: Run;
    try {
      run = await Run.start({
        ...(spec.ready ? { ready: spec.ready } : {}),
        ...(spec.spares ? { spares: spec.spares } : {}),
        paths: spec.paths,
        worker: spec.worker,
        kind: "session",
        drive: {
          engine: {
            mode: "rpc",
            task: "",
            session: {
              channel: spec.channel,
              provider: spec.provider,
              replyBy: spec.replyBy,
              trusted: isTrusted(spec.paths, spec.channel),
            },
          },
        },
        boxEnv: { ROSTER_CHANNEL_DIR: `${BOX_HOME}/channel` },
        interactive: true,
        stall: "turns",
        onLine: (line) => {
          if (session) session.rpc.line(line);
          else feed.push(line);
        },
        onStderr: () => session?.activity(),
        note: spec.note,
        ...(spec.env ? { env: spec.env } : {}),
      });
    } catch (error) {
      // refused before any record (config, image, gateway): reported as it is
      const runId = failedRunId(error);
      if (!runId) throw error;
      throw new SessionError(`the session could not start: ${errorMessage(error)}`, runId);
    }
    const stdin = run.stdin;
    if (!stdin) {
      await run.settle({ endedBy: "error", error: "the box was started without stdin" });
      throw new SessionError("the session could not start: the box has no stdin", run.id);
    }
    const { box } = run.worker;
    const idleSecs = idleSecsFor(box, spec.provider);
    const rpc = new PiRpc(stdin, () => session?.activity(), turnWriter(run));
    const memory = memoryTurnBlock(run.worker.memory, await readMemory(spec.paths, spec.worker));
    session = new Session(spec, run, rpc, spec.idleMs ?? idleSecs * 1000, memory);
    for (const line of feed.splice(0)) rpc.line(line);
    return session;
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
    next.listener.onStart?.();
    // the turn ceiling and the stall watch are the run owner's; a limit ends the box, and boxEnded says why
    this.run.beginTurn();
    // read as the turn starts, not when it was queued: the purpose may change while it waits
    const input = this.purpose.turnInput(next.input);
    const head = this.memoryHead;
    this.memoryHead = undefined;
    const handed = head ? `${head}\n${input}` : input;
    // what this turn was told, for `roster runs context --all`
    recordTurn(this.run.dir, this.turns + 1, handed);
    this.rpc.prompt(handed, next.listener).then(
      (result) => {
        this.turnDone();
        // a model refused by a used-up budget: the sender is told why, and when it opens again
        const budget = result.modelError ? this.run.budgetStop() : undefined;
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
    this.run.endTurn();
    this.busy = false;
    this.turns++;
    this.armIdle();
    this.pump();
  }

  /** Something happened (a message, a line from pi): the quiet spell starts again. */
  private activity(): void {
    this.run.activity();
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
    const limit = this.run.limitReached(outcome);
    if (limit?.limit === "ceiling") {
      // the session's own ceiling: a clean end between turns, a failure mid-turn
      const midTurn = this.busy;
      void this.end(
        "ceiling",
        `${limit.message}${midTurn ? " mid-turn" : ""}`,
        midTurn ? "failed" : "done",
      );
    } else if (limit) {
      void this.end(limit.endedBy, limit.message, "failed");
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
    const reason = error ?? `the session ended (${endedBy})`;
    // a turn cut short counts: its sender was answered (with the reason)
    const turns = this.turns + (this.busy ? 1 : 0);
    this.rpc.fail(new SessionError(reason, this.runId));
    for (const waiting of this.queue.splice(0)) {
      waiting.reject(
        new SessionError(
          `the session ended before this message was handled: ${reason}`,
          this.runId,
        ),
      );
    }
    this.run.stdin?.end();
    await this.run.settle({ endedBy, state, turns, ...(error ? { error } : {}) });
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

/** How the session's agent is spoken to on its stdin (pi-rpc.ts TurnWriter). */
function turnWriter(run: Run): TurnWriter {
  const agent = runAgent(run.worker, "rpc");
  if (agent === "claude") return CLAUDE_WRITER;
  if (agent === "codex")
    return new CodexAppServer(codexThread(run.worker, run.prompt?.system ?? ""));
  return PI_WRITER;
}

/** The `[box]` idle window a platform's warm session is held open for: its terms say talk's or chat's. */
export function idleSecsFor(
  box: { talk_idle_secs: number; chat_idle_secs: number },
  provider: string,
): number {
  const talk = chatPlatforms().find((platform) => platform.name === provider)?.idle === "talk";
  return talk ? box.talk_idle_secs : box.chat_idle_secs;
}
