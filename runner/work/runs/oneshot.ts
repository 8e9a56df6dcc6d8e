import type { RosterPaths } from "../../ground/config/paths.ts";
import { RosterError } from "../../ground/errors.ts";
import type { EndedBy, RunRecord } from "../../records/run-records/run-record.ts";
import type { TaskOrigin } from "../prompt/compile.ts";
import type { AheadClones } from "../repos/clone.ts";
import { describeBudgetStop } from "./budget-stop.ts";
import { assistantText, describeEvent, modelErrorOf, parseEvent } from "./pi-events.ts";
import { Run } from "./run.ts";
import type { ReadyStart } from "./run-request.ts";
import { describeSentinelLeak } from "./sentinel-mark.ts";

/**
 * `roster run <worker> "<prompt>"` and a queued task's run: pi in json mode
 * in a box the run owner (run.ts) starts, limits and settles. What is this
 * file's own is how pi is driven, the live view of its events, the answer,
 * and what the outcome means for the exit code. If the gateway goes away
 * mid-run the box is killed at once and the run fails with that cause (a box
 * never outlives its door).
 */
export interface OneShotOptions {
  paths: RosterPaths;
  worker: string;
  prompt: string;
  /** The wall-clock ceiling in minutes (config/ceiling.ts bounds it). */
  ceiling_min: number;
  json: boolean;
  write: (text: string) => void;
  note: (text: string) => void;
  signal?: AbortSignal;
  env?: NodeJS.ProcessEnv;
  /** A queued task's run: recorded as kind "task", and the box may report the task's outcome. */
  taskId?: string;
  /** A task filed from a chat session: the channel's purpose is in its prompt. */
  origin?: TaskOrigin;
  /** Told the run's id as soon as its record exists (the dispatcher claims the task with it). */
  /** Awaited before the $HOME is built: a task's claim is in the schedule.json its run sees. */
  onRecord?: (record: RunRecord) => void | Promise<void>;
  /** Takes a server's ready box for the worker, if it has one (docs/ready-boxes.md). */
  takeReady?: (worker: string) => Promise<ReadyStart | undefined>;
  /** A server's clones made ahead of their runs (repos/spare-clones.ts). */
  spares?: AheadClones;
  /**
   * Return once the answer is final (the box gone, how it ended known), before
   * the store snapshot and the record's last write: `settled` follows them.
   */
  answerFirst?: boolean;
}

export interface OneShotResult {
  exitCode: number;
  record: RunRecord | undefined;
  answer: string | undefined;
  /** The record once its bookkeeping is done (already so unless answerFirst). */
  settled: Promise<RunRecord>;
}

/** A limit stopped it: the ceiling, the stall watch, the disk watch, its output, a used-up budget. */
const LIMITS: EndedBy[] = ["ceiling", "stalled", "disk", "output", "budget"];

export async function runOneShot(options: OneShotOptions): Promise<OneShotResult> {
  let answer: string | undefined;
  let modelError: string | undefined;
  const onLine = (line: string) => {
    const event = parseEvent(line);
    // a ready box's pi answers the runner's RPC prompt: not one of json mode's events
    if (event?.type === "response") return;
    if (options.json) options.write(`${line}\n`);
    if (!event) return;
    const text = assistantText(event);
    if (text) answer = text;
    // the last word counts: pi retries a failed call, and a later answer clears the error
    if (event.type === "message_end" && (event.message as { role?: string })?.role === "assistant")
      modelError = modelErrorOf(event);
    const shown = options.json ? undefined : describeEvent(event);
    if (shown) options.note(shown);
  };
  const ready = await options.takeReady?.(options.worker);
  const run = await Run.start({
    ...(ready ? { ready } : {}),
    paths: options.paths,
    worker: options.worker,
    kind: options.taskId ? "task" : "box",
    ceiling_min: options.ceiling_min,
    drive: {
      engine: {
        mode: "json",
        task: options.prompt,
        ...(options.taskId ? { taskId: options.taskId } : {}),
        ...(options.origin ? { origin: options.origin } : {}),
      },
    },
    stall: "box",
    // pi's events, line by line within their bound (box-output.ts)
    onLine,
    note: options.note,
    ...(options.onRecord ? { onRecord: options.onRecord } : {}),
    ...(options.spares ? { spares: options.spares } : {}),
    ...(options.env ? { env: options.env } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const outcome = await run.done;
  const limit = run.limitReached(outcome);
  if (limit?.limit === "gateway") {
    // the box was killed because its gateway went away: a failure of the run, not the worker
    await run.settle({ endedBy: "error", error: limit.message });
    throw new RosterError(limit.message, { exitCode: 1 });
  }
  // a model refused by a used-up budget, as the gateway's audit has it, is why the run stopped
  const budget = outcome.endedBy === "exit" && modelError ? run.budgetStop() : undefined;
  const endedBy: EndedBy = budget ? "budget" : (limit?.endedBy ?? outcome.endedBy);
  const error = budget ? `stopped: ${describeBudgetStop(budget)}` : limit?.message;
  const ending = { endedBy, exitCode: outcome.exitCode, ...(error ? { error } : {}) };
  // the record as the run ends: its answer depends on nothing the snapshot changes
  const record = options.answerFirst ? await run.answer(ending) : await run.settle(ending);
  if (!options.json && answer) options.write(`${answer.trimEnd()}\n`);
  if (record.error && endedBy !== "exit") options.note(`run ${record.id}: ${record.error}`);
  if (record.sentinel_leak)
    options.note(`run ${record.id}: ${describeSentinelLeak(record.sentinel_leak)}`);
  // 2: a limit stopped it; 130: interrupted; otherwise the box's own
  const exitCode = endedBy === "signal" ? 130 : LIMITS.includes(endedBy) ? 2 : outcome.exitCode;
  return { exitCode, record, answer, settled: run.settle(ending) };
}
