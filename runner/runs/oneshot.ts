import { createWriteStream } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { outcomesSince } from "../actions/journal.ts";
import { BOX_HOME, RUN_PI } from "../box/layout.ts";
import { startBox } from "../box/lifecycle.ts";
import { durationMs } from "../config/duration.ts";
import type { RosterPaths } from "../config/paths.ts";
import { errorMessage, RosterError } from "../errors.ts";
import { mintToken, revokeToken } from "../gateway/identity.ts";
import { buildRunHome } from "../home/build-home.ts";
import { compilePrompt } from "../prompt/compile.ts";
import { budgetStop, describeBudgetStop } from "./budget-stop.ts";
import {
  assistantText,
  describeEvent,
  LineSplitter,
  modelErrorOf,
  parseEvent,
} from "./pi-events.ts";
import { type Provisioned, provision } from "./provision.ts";
import {
  type EndedBy,
  finished,
  listRuns,
  newRunId,
  type RunRecord,
  readRecord,
  runDir,
  writeRecord,
} from "./run-record.ts";
import { StallWatchdog, stallMessage } from "./stall-watchdog.ts";

/**
 * `roster run <worker> "<prompt>"`: one governed run, end to end. The box comes
 * from the one path every run shares (provision.ts for the preconditions,
 * box/worker-box.ts for the spec); what is this file's own is pi in json mode,
 * the live view and how the record ends. Whatever happens, the container is removed, the token revoked and the record
 * finished; if the gateway goes away mid-run the box is killed at once and the
 * run fails with that cause (a box never outlives its door).
 */
export interface OneShotOptions {
  paths: RosterPaths;
  worker: string;
  prompt: string;
  ceilingMinutes: number;
  json: boolean;
  write: (text: string) => void;
  note: (text: string) => void;
  signal?: AbortSignal;
  env?: NodeJS.ProcessEnv;
  /** A queued task's run: recorded as kind "task", and the box may report the task's outcome. */
  taskId?: string;
  /** Told the run's id as soon as its record exists (the dispatcher claims the task with it). */
  onRecord?: (record: RunRecord) => void;
}

export interface OneShotResult {
  exitCode: number;
  record: RunRecord | undefined;
  answer: string | undefined;
}

function refuse(message: string, exitCode = 2): RosterError {
  return new RosterError(message, { exitCode });
}

export async function runOneShot(options: OneShotOptions): Promise<OneShotResult> {
  const box = await provision({
    paths: options.paths,
    worker: options.worker,
    note: options.note,
    ...(options.env ? { env: options.env } : {}),
  });
  try {
    return await startRun(options, box);
  } finally {
    await box.release();
  }
}

async function startRun(options: OneShotOptions, box: Provisioned): Promise<OneShotResult> {
  const { paths } = options;
  const { worker, identity, gateway } = box;
  // before this run's record exists: the previous run's start bounds "since your last run"
  const previous = listRuns(paths.state, worker.name)[0];
  const since = previous ? readRecord(previous.dir)?.started_at : undefined;
  const id = newRunId();
  const dir = runDir(paths.state, worker.name, id);
  let record: RunRecord = {
    id,
    worker: worker.name,
    kind: options.taskId ? "task" : "box",
    state: "running",
    started_at: new Date().toISOString(),
    ceiling_min: options.ceilingMinutes,
    container: `roster-box-${id}`,
    runner_pid: process.pid,
    ...(options.taskId ? { task_id: options.taskId } : {}),
  };
  await writeRecord(dir, record);
  options.onRecord?.(record);
  let token: string | undefined;
  try {
    let prompt: ReturnType<typeof compilePrompt>;
    try {
      prompt = compilePrompt({
        worker,
        identity,
        task: options.prompt,
        runId: id,
        ceilingMinutes: options.ceilingMinutes,
        ...(options.taskId ? { taskId: options.taskId } : {}),
        outcomes: outcomesSince(paths, worker.name, since),
      });
    } catch (error) {
      throw refuse(`the prompt can't be compiled: ${errorMessage(error)}`);
    }
    await mkdir(join(dir, "prompt"), { recursive: true });
    await writeFile(join(dir, "prompt/system.md"), prompt.system);
    await writeFile(join(dir, "prompt/input.md"), prompt.input);

    const home = await buildRunHome({ paths, worker, runDir: dir, runId: id });
    if (Object.keys(home.repos.record).length) {
      record = { ...record, repos: home.repos.record };
      await writeRecord(dir, record);
    }
    token = await mintToken(paths.identity, { subject: `org/${worker.name}`, runId: id });
    const events = createWriteStream(join(dir, "events.jsonl"), { flags: "a" });
    const stderr = createWriteStream(join(dir, "stderr.log"), { flags: "a" });
    const splitter = new LineSplitter();
    let answer: string | undefined;
    let modelError: string | undefined;
    const onLine = (line: string) => {
      if (options.json) options.write(`${line}\n`);
      const event = parseEvent(line);
      if (!event) return;
      const text = assistantText(event);
      if (text) answer = text;
      // the last word counts: pi retries a failed call, and a later answer clears the error
      if (
        event.type === "message_end" &&
        (event.message as { role?: string })?.role === "assistant"
      )
        modelError = modelErrorOf(event);
      const shown = options.json ? undefined : describeEvent(event);
      if (shown) options.note(shown);
    };
    const stallMs = durationMs(worker.box.stall_after);
    let stop: ((reason: "stalled") => Promise<void>) | undefined;
    const watchdog =
      stallMs === undefined
        ? undefined
        : new StallWatchdog(stallMs, home.home, () => void stop?.("stalled"));
    const started = await startBox(
      box.docker,
      box.boxSpec({
        runId: id,
        home,
        token,
        cmd: [
          RUN_PI,
          "--mode",
          "json",
          "--session-dir",
          `${BOX_HOME}/session`,
          "--append-system-prompt",
          prompt.system,
          prompt.input,
        ],
        env: {
          ROSTER_CEILING_MIN: String(options.ceilingMinutes),
          ...(options.taskId ? { ROSTER_TASK_ID: options.taskId } : {}),
        },
      }),
      {
        deadlineMs: options.ceilingMinutes * 60_000,
        ...(options.signal ? { signal: options.signal } : {}),
        fault: gateway.lost,
        onStdout: (chunk) => {
          watchdog?.activity();
          events.write(chunk);
          for (const line of splitter.push(chunk.toString("utf8"))) onLine(line);
        },
        onStderr: (chunk) => {
          watchdog?.activity();
          stderr.write(chunk);
        },
      },
    );
    stop = started.kill;
    watchdog?.start();
    const outcome = await started.done;
    watchdog?.stop();
    for (const line of splitter.flush()) onLine(line);
    const repos = await box.settleRepos({ id, dir, records: record.repos });
    if (repos) record = { ...record, repos };
    await Promise.all(
      [events, stderr].map((stream) => new Promise((resolve) => stream.end(resolve))),
    );
    if (outcome.endedBy === "error") {
      // the box was killed because its gateway went away: a failure of the run, not the worker
      const cause = `${errorMessage(gateway.lost.reason)} during the run; the box was stopped`;
      record = finished(record, "error", undefined, cause);
      await writeRecord(dir, record);
      throw new RosterError(cause, { exitCode: 1 });
    }
    // a model refused by a used-up budget, as the gateway's audit has it, is why the run stopped
    const budget =
      outcome.endedBy === "exit" && modelError ? budgetStop(paths.audit, id) : undefined;
    const endedBy: EndedBy = budget ? "budget" : outcome.endedBy;
    record = finished(record, endedBy, outcome.exitCode);
    if (endedBy === "ceiling")
      record.error = `killed at the ${options.ceilingMinutes}-minute ceiling`;
    if (endedBy === "stalled" && stallMs !== undefined) record.error = stallMessage(stallMs);
    if (budget) record.error = `stopped: ${describeBudgetStop(budget)}`;
    await writeRecord(dir, record);
    if (!options.json && answer) options.write(`${answer.trimEnd()}\n`);
    if (record.error && endedBy !== "exit") options.note(`run ${id}: ${record.error}`);
    // 2: a limit stopped it (ceiling, stall, budget); 130: interrupted; otherwise the box's own
    const limits: EndedBy[] = ["ceiling", "stalled", "budget"];
    const exitCode = endedBy === "signal" ? 130 : limits.includes(endedBy) ? 2 : outcome.exitCode;
    return { exitCode, record, answer };
  } catch (error) {
    if (record.state === "running") {
      record = finished(record, "error", undefined, errorMessage(error));
      await writeRecord(dir, record);
    }
    throw error;
  } finally {
    if (token) await revokeToken(paths.identity, token);
  }
}
