import { loadConfig } from "../../ground/config/load.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { errorMessage } from "../../ground/errors.ts";
import { type Task, updateTasks } from "../../records/task-list/store.ts";
import type { AheadClones } from "../../work/repos/clone.ts";
import { runOneShot } from "../../work/runs/oneshot.ts";
import type { ReadyStart } from "../../work/runs/run-request.ts";
import { settleFromRun } from "../../work/tasks/settle-run.ts";
import { replyFromTask } from "../actions/task-reply.ts";
import { readyTasks } from "./ready-tasks.ts";
import { fireDueTemplates } from "./recurring.ts";

/**
 * Task dispatch: each tick fires the recurring templates whose time has come
 * (recurring.ts), then every task that may start (ready-tasks.ts: its time,
 * window, dependencies and standing) of every worker runs in its own box, at most `cap` boxes at a time, each bounded by
 * its task's ceiling. A task is claimed (with the run's id) before its box
 * starts and settled as the host attests the run ended (tasks/attest.ts):
 * its own report counts only when the run ended well; a run that ended
 * without saying is left for a person (needs-review) rather than run again,
 * since it may have acted.
 */
export interface DispatchOptions {
  paths: RosterPaths;
  cap: number;
  note: (text: string) => void;
  env?: NodeJS.ProcessEnv;
  /** Boxes running besides tasks (sessions, runs handed over by `roster run`): they count toward the cap. */
  otherBoxes?: () => number;
  /** The server's ready boxes: a task takes one when there is one. */
  takeReady?: (worker: string) => Promise<ReadyStart | undefined>;
  /** The server's clones made ahead: a task's gated repos come from them when current. */
  spares?: AheadClones;
  /** The dispatcher's clock: what a tick without a time takes as now (tests move it). */
  clock?: () => Date;
}

const HOLD_AFTER_REFUSAL_MS = 60_000;

export class Dispatcher {
  private readonly running = new Map<string, Promise<void>>();
  /** Tasks refused before a box ran: not retried before this time (ms), so a missing credential isn't hammered. */
  private readonly held = new Map<string, number>();
  private stopped = false;
  private readonly abort = new AbortController();

  constructor(private readonly options: DispatchOptions) {}

  get active(): number {
    return this.running.size;
  }

  /** Starts what is due, up to the cap; returns how many it started. */
  async tick(now = this.options.clock?.() ?? new Date()): Promise<number> {
    if (this.stopped) return 0;
    const { paths } = this.options;
    const config = loadConfig(paths.config, { vaultDir: paths.vault });
    for (const line of await fireDueTemplates(paths, config, now)) this.options.note(line);
    let started = 0;
    for (const { worker, task } of await readyTasks(paths, config, now)) {
      const busy = this.running.size + (this.options.otherBoxes?.() ?? 0);
      if (busy >= this.options.cap || this.stopped) break;
      const key = `${worker}/${task.id}`;
      if (this.running.has(key) || (this.held.get(key) ?? 0) > now.getTime()) continue;
      const run = this.run(worker, task).finally(() => this.running.delete(key));
      this.running.set(key, run);
      started++;
    }
    return started;
  }

  /** Waits for every task box started so far. */
  async drain(): Promise<void> {
    while (this.running.size) await Promise.allSettled([...this.running.values()]);
  }

  /** Stops starting tasks and kills the running boxes (their tasks go back to the queue). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    await this.drain();
  }

  private async run(worker: string, task: Task): Promise<void> {
    const { paths, note } = this.options;
    let runId: string | undefined;
    const claim = (id: string) =>
      updateTasks(
        paths,
        worker,
        (list) =>
          list.tasks.map((t) =>
            t.id === task.id
              ? { ...t, state: "claimed", run_id: id, claimed_at: new Date().toISOString() }
              : t,
          ),
        { finished: false },
      );
    let claimed: Promise<unknown> = Promise.resolve();
    note(`task ${task.id} of ${worker}: starting`);
    try {
      const result = await runOneShot({
        paths,
        worker,
        // a late fire says so, so the worker can tell a catch-up from the day's own run
        prompt: task.catch_up
          ? `${task.prompt}\n\n(This is a catch-up run of a recurring task: ${task.catch_up}.)`
          : task.prompt,
        ceiling_min: task.ceiling_min,
        json: false,
        taskId: task.id,
        ...(task.channel
          ? { origin: { channel: task.channel, replyTo: task.reply_to === true } }
          : {}),
        write: () => undefined,
        note: () => undefined,
        signal: this.abort.signal,
        ...(this.options.takeReady ? { takeReady: this.options.takeReady } : {}),
        ...(this.options.spares ? { spares: this.options.spares } : {}),
        ...(this.options.env ? { env: this.options.env } : {}),
        onRecord: async (record) => {
          runId = record.id;
          claimed = claim(record.id);
          await claimed;
        },
      });
      await claimed;
      const id = result.record?.id ?? runId;
      // the host, not the run, says how the task ended (tasks/attest.ts)
      const settled = id
        ? await settleFromRun(paths, worker, id, (t) => t.id === task.id, {
            serverStopping: this.stopped,
          })
        : undefined;
      const retryAfter = settled?.attestation.retryAfterSecs;
      if (retryAfter !== undefined)
        this.held.set(`${worker}/${task.id}`, Date.now() + retryAfter * 1000);
      note(
        `task ${task.id} of ${worker}: ${settled?.attestation.said ?? "settled elsewhere"} (run ${id ?? "?"}, ${result.record?.ended_by ?? "?"})`,
      );
      // a task asked for in a chat answers there, once it is settled (task-reply.ts)
      const replied =
        !settled || settled.attestation.state === "pending" || !id
          ? undefined
          : await replyFromTask({ paths, worker, task, runId: id, answer: result.answer });
      if (replied) note(replied);
    } catch (error) {
      await claimed.catch(() => undefined);
      // refused before a box ran (config, credential …): it stays queued, the reason is noted
      if (!runId) this.held.set(`${worker}/${task.id}`, Date.now() + HOLD_AFTER_REFUSAL_MS);
      await this.settle(worker, task, runId ? "failed" : "pending", { note: errorMessage(error) });
      note(`task ${task.id} of ${worker}: ${errorMessage(error)}`);
    }
  }

  private async settle(
    worker: string,
    task: Task,
    state: Task["state"],
    detail: { note?: string | undefined },
  ): Promise<void> {
    await updateTasks(
      this.options.paths,
      worker,
      (list) =>
        list.tasks.map((t) =>
          t.id === task.id
            ? {
                ...t,
                state,
                ...(state === "pending" ? {} : { finished_at: new Date().toISOString() }),
                ...(detail.note ? { note: detail.note } : {}),
              }
            : t,
        ),
      { finished: false },
    );
  }
}
