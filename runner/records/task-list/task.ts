/**
 * One task on a worker's list (store.ts keeps the list), and the states it
 * passes through: what the list, its journal of finished tasks (finished.ts)
 * and everything that reads them share.
 */
export type TaskState =
  | "pending"
  | "claimed"
  | "done"
  | "failed"
  | "needs-review"
  /** A task it depends on failed or was cancelled: it never runs (requeue it to try again). */
  | "blocked"
  /** Taken off the list by the operator (`roster task rm`) before it ran. */
  | "cancelled";

/**
 * owner: filed by the operator, or at a trusted channel's ask; it always runs.
 * proactive: the worker's own idea (or from an untrusted context); it waits
 * while a budget limit stands at or above `[budget] soft_stop`.
 */
export type Standing = "owner" | "proactive";

export interface Task {
  id: string;
  prompt: string;
  ceiling_min: number;
  /** Not before this time (RFC 3339, UTC). */
  at?: string;
  state: TaskState;
  filed_at: string;
  /** "cli:<user>", "run:<id>" when a worker filed it, or "hook:<name>" for a webhook's delivery. */
  filed_by: string;
  /** The run that has it (claimed) or last had it. */
  run_id?: string;
  claimed_at?: string;
  finished_at?: string;
  /** The run's own words on how it ended (task_complete / task_fail), or why it was requeued. */
  note?: string;
  /** Tasks on this list that must be done before this one starts. */
  depends_on?: string[];
  /** Absent on tasks filed before standing existed: read as proactive unless a person filed it. */
  standing?: Standing;
  /** The recurring template that fired it. */
  template_id?: string;
  /** From its template: it starts only inside this host-local window ("09:00-17:00"). */
  window?: string;
  /** A template's fire made late (the server was down): when it was due and how many were missed. */
  catch_up?: string;
  /** The chat channel of the session that filed it: its purpose is in the run's prompt. */
  channel?: string;
  /** Its run's final answer is proposed back into `channel`, with a session reply's trust. */
  reply_to?: boolean;
  /**
   * The conversations the run that filed it carried (its run-context.json):
   * this task's run carries them too, so the clean-room rule can't be
   * stepped around by filing a task.
   */
  context_channels?: string[];
  /**
   * Who an inbound message came from, when the task relays one (`roster task
   * relay`, a webhook): its prompt holds that message as quoted outside
   * content, and its context_channels say "relay:<from>" so the run counts as
   * carrying it.
   */
  relayed_from?: string;
}
