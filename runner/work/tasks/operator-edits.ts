import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { RosterError } from "../../ground/errors.ts";
import {
  OPEN_STATES,
  readTasks,
  type Task,
  type Template,
  updateList,
  updateTasks,
} from "../../records/task-list/store.ts";
import { HEARTBEAT_ID } from "./templates.ts";

/**
 * What the operator does to a list by id (`roster task rm | requeue`): a
 * template is retired; a task that has not started is cancelled (kept, so
 * what depends on it is blocked with that reason); a finished, failed,
 * blocked or cancelled task goes back to pending. Refused with the reason,
 * never half done.
 */
const usage = { exitCode: 2 } as const;

function workersOf(paths: RosterPaths): string[] {
  const root = join(paths.data, "workers");
  return existsSync(root) ? readdirSync(root).sort() : [];
}

/** The worker whose list holds this template id (any unique prefix of r-…). */
export function findTemplate(paths: RosterPaths, prefix: string): Template & { worker: string } {
  const matches = workersOf(paths).flatMap((worker) =>
    (readTasks(paths, worker).recurring ?? [])
      .filter((template) => template.id.startsWith(prefix))
      .map((template) => ({ ...template, worker })),
  );
  if (matches.length === 1 && matches[0]) return matches[0];
  throw new RosterError(
    matches.length
      ? `template id "${prefix}" is ambiguous: ${matches.map((one) => one.id).join(", ")}`
      : `no recurring template "${prefix}" (roster task ls lists them)`,
    usage,
  );
}

export async function retireTemplate(paths: RosterPaths, prefix: string): Promise<string> {
  const template = findTemplate(paths, prefix);
  if (template.id === HEARTBEAT_ID)
    throw new RosterError(
      `${template.id} is ${template.worker}'s heartbeat: switch it off in its worker.toml (heartbeat = "off")`,
      usage,
    );
  await updateList(paths, template.worker, (current) => ({
    tasks: current.tasks,
    recurring: (current.recurring ?? []).filter((one) => one.id !== template.id),
  }));
  return `${template.id} of ${template.worker} retired (the tasks it filed stay on the list)`;
}

/** One task changed by `edit` (which throws to refuse), the rest of the list as it was. */
async function changeTask(
  paths: RosterPaths,
  task: { id: string; worker: string },
  edit: (one: Task) => Task,
): Promise<void> {
  await updateTasks(paths, task.worker, (current) =>
    current.tasks.map((one) => (one.id === task.id ? edit(one) : one)),
  );
}

export async function cancelTask(
  paths: RosterPaths,
  task: { id: string; worker: string },
  by: string,
): Promise<string> {
  await changeTask(paths, task, (one) => {
    if (one.state === "claimed")
      throw new RosterError(
        `${one.id} is running (run ${one.run_id ?? "?"}); it can't be taken off the list now`,
        usage,
      );
    if (one.state !== "pending" && one.state !== "blocked")
      throw new RosterError(`${one.id} is ${one.state} already; nothing to cancel`, usage);
    return {
      ...one,
      state: "cancelled",
      finished_at: new Date().toISOString(),
      note: `cancelled by ${by}`,
    };
  });
  return `${task.id} of ${task.worker} cancelled`;
}

export async function requeueTask(
  paths: RosterPaths,
  task: { id: string; worker: string },
  by: string,
): Promise<string> {
  await changeTask(paths, task, (one) => {
    if (OPEN_STATES.has(one.state))
      throw new RosterError(`${one.id} is ${one.state} already; nothing to requeue`, usage);
    const { finished_at: _finished, claimed_at: _claimed, ...rest } = one;
    return { ...rest, state: "pending", note: `requeued by ${by} (was ${one.state})` };
  });
  return `${task.id} of ${task.worker} is pending again`;
}
