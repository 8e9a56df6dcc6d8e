/**
 * A run's wall-clock ceiling: one name (`ceiling_min`, in minutes), one
 * bound and one check, whichever way a ceiling comes — `roster run
 * --ceiling`, the server's run socket, a task (`roster task add`, a worker's
 * file_task or set_tasks), a heartbeat, a session's `[box]` limits or
 * `roster box exec --timeout`. A value over the bound is refused with the
 * same words on every path; nothing is clamped silently.
 */
export const DEFAULT_CEILING_MIN = 30;

/** A recurring template's default: a chore that comes back is meant to be short. */
export const TEMPLATE_CEILING_MIN = 20;

/** One day: the longest any run, task or session may be given. */
export const MAX_CEILING_MIN = 24 * 60;

/** Why this ceiling can't be used (one line), or undefined when it can. */
export function ceilingProblem(minutes: number): string | undefined {
  if (!Number.isFinite(minutes) || minutes <= 0)
    return `a run's ceiling must be a positive number of minutes (got ${minutes})`;
  if (minutes > MAX_CEILING_MIN)
    return `a run's ceiling is at most ${MAX_CEILING_MIN} minutes (24 hours); ${minutes} was asked`;
  return undefined;
}
