/**
 * What `roster task add | relay | ls | show | rm | requeue` do and print: a
 * worker's task list and its recurring templates, as lines or JSON. What the
 * operator files has owner standing (unless --proactive); a relayed message
 * is the sender's, not the operator's: proactive, quoted as outside content.
 * Loaded only when one of these commands runs.
 */

import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { rosterPaths } from "../../ground/config/paths.ts";
import { operatorName } from "../../ground/operator.ts";
import type { AddFlags } from "../../work/tasks/operator-add.ts";
import type { RelayFlags } from "../../work/tasks/relay.ts";

const operator = () => operatorName();

/** `roster task add`: a task on the worker's list, or a recurring template. */
export async function addTaskCommand(
  worker: string,
  prompt: string[],
  flags: AddFlags,
): Promise<void> {
  const { fileOperatorTask } = await import("../../work/tasks/operator-add.ts");
  process.stdout.write(
    await fileOperatorTask(rosterPaths(), worker, prompt.join(" "), flags, operator()),
  );
}

/** `roster task relay`: an inbound message on the worker's list, quoted as untrusted content. */
export async function relayTaskCommand(
  worker: string,
  message: string[],
  flags: RelayFlags,
): Promise<void> {
  const { fileRelay } = await import("../../work/tasks/relay.ts");
  const { RosterError } = await import("../../ground/errors.ts");
  const ceiling = flags.ceiling === undefined ? undefined : Number(flags.ceiling);
  if (ceiling !== undefined && !Number.isFinite(ceiling))
    throw new RosterError(`--ceiling ${flags.ceiling}: a number of minutes`, { exitCode: 2 });
  const { task, version } = await fileRelay(rosterPaths(), {
    worker,
    message: message.join(" "),
    from: flags.from,
    ceilingMin: ceiling,
    by: operator(),
  });
  process.stdout.write(
    flags.json
      ? `${JSON.stringify({ ...task, worker })}\n`
      : `${task.id} pending for ${worker}: relayed from ${JSON.stringify(task.relayed_from)}, quoted as untrusted content (proactive, ${task.ceiling_min} min; list version ${version})\n`,
  );
}

/** `roster task ls`: tasks newest first, then recurring templates and their next fires. */
export async function listTasksCommand(
  worker: string | undefined,
  flags: { json?: boolean },
): Promise<void> {
  const { allTasks, readTasks } = await import("../../records/task-list/store.ts");
  const { taskLine, templateLine } = await import("../../work/tasks/list-view.ts");
  const paths = rosterPaths();
  const tasks = allTasks(paths, worker);
  const workers = [...new Set([...(worker ? [worker] : []), ...listedWorkers(paths)])];
  const templates = workers.flatMap((name) =>
    (readTasks(paths, name).recurring ?? []).map((one) => ({ ...one, worker: name })),
  );
  if (flags.json) {
    for (const one of tasks) process.stdout.write(`${JSON.stringify(one)}\n`);
    for (const one of templates)
      process.stdout.write(`${JSON.stringify({ kind: "template", ...one })}\n`);
    return;
  }
  if (!tasks.length) process.stdout.write("no tasks\n");
  for (const one of tasks) process.stdout.write(`${taskLine(one)}\n`);
  if (templates.length) {
    process.stdout.write("\nrecurring:\n");
    for (const one of templates) process.stdout.write(`${templateLine(one)}\n`);
  }
}

/** `roster task show`: one task (t-…) or template (r-…) in full, with its run's outcome. */
export async function showTaskCommand(id: string, flags: { json?: boolean }): Promise<void> {
  const { findTask } = await import("../../records/task-list/store.ts");
  const { findTemplate } = await import("../../work/tasks/operator-edits.ts");
  const { taskDetail, templateDetail } = await import("../../work/tasks/list-view.ts");
  const paths = rosterPaths();
  const template = id.startsWith("r-");
  const one = template ? findTemplate(paths, id) : findTask(paths, id);
  if (flags.json) process.stdout.write(`${JSON.stringify(one, null, 2)}\n`);
  else if (template) process.stdout.write(templateDetail(findTemplate(paths, id)));
  else {
    const task = findTask(paths, id);
    const { readRecord, runDir } = await import("../../records/run-records/run-record.ts");
    const { readReport } = await import("../../work/tasks/run-facts.ts");
    const run = task.run_id
      ? {
          ended_by: readRecord(runDir(paths.state, task.worker, task.run_id))?.ended_by,
          report: readReport(paths, task.worker, task.run_id),
        }
      : undefined;
    process.stdout.write(taskDetail(task, run));
  }
}

/** `roster task rm`: retire a template, or cancel a task that has not started. */
export async function removeTaskCommand(id: string): Promise<void> {
  const { findTask } = await import("../../records/task-list/store.ts");
  const { cancelTask, retireTemplate } = await import("../../work/tasks/operator-edits.ts");
  const paths = rosterPaths();
  const said = id.startsWith("r-")
    ? await retireTemplate(paths, id)
    : await cancelTask(paths, findTask(paths, id), operator());
  process.stdout.write(`${said}\n`);
}

/** `roster task requeue`: a finished, failed, blocked or cancelled task pending again. */
export async function requeueTaskCommand(id: string): Promise<void> {
  const { findTask } = await import("../../records/task-list/store.ts");
  const { requeueTask } = await import("../../work/tasks/operator-edits.ts");
  const paths = rosterPaths();
  process.stdout.write(`${await requeueTask(paths, findTask(paths, id), operator())}\n`);
}

/** Every worker with a data folder, so templates of workers with no tasks are listed too. */
function listedWorkers(paths: ReturnType<typeof rosterPaths>): string[] {
  const root = join(paths.data, "workers");
  return existsSync(root) ? readdirSync(root).sort() : [];
}
