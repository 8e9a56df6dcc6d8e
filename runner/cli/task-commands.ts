import { existsSync, readdirSync } from "node:fs";
import { userInfo } from "node:os";
import { join } from "node:path";
import type { Command } from "commander";
import { rosterPaths } from "../config/paths.ts";
import type { AddFlags } from "./task-add.ts";

/**
 * `roster task add | ls | show | rm | requeue`: a worker's task list and its
 * recurring templates (the server dispatches them). What the operator files
 * has owner standing.
 */
const operator = () => `cli:${process.env.USER ?? userInfo().username}`;

export function registerTaskCommands(program: Command): void {
  const task = program.command("task").description("a worker's task list and recurring tasks");

  task
    .command("add <worker> <prompt...>")
    .description("put a task on a worker's list, or with --cron/--every a recurring template")
    .option(
      "--ceiling <minutes>",
      "wall-clock ceiling of its run in minutes (at most 1440; default 30, 20 for a template)",
    )
    .option("--at <time>", "not before this time (RFC 3339 in UTC, ending in Z)")
    .option("--cron <expression>", 'recurring: a 5-field cron expression, e.g. "0 9 * * 1-5"')
    .option("--every <interval>", 'recurring: an interval, "30m", "6h" or "1d"')
    .option("--window <HH:MM-HH:MM>", "recurring: never start outside this host-local window")
    .option("--after <ids>", "start only when these tasks are done (comma-separated ids)")
    .option("--json", "the task or template as JSON")
    .action(async (worker: string, prompt: string[], flags: AddFlags) => {
      const { addFromCli } = await import("./task-add.ts");
      process.stdout.write(
        await addFromCli(rosterPaths(), worker, prompt.join(" "), flags, operator()),
      );
    });

  task
    .command("ls [worker]")
    .description("tasks, newest first, then recurring templates and their next fires")
    .option("--json", "one JSON task (or template, with kind) per line")
    .action(async (worker: string | undefined, flags: { json?: boolean }) => {
      const { allTasks, readTasks } = await import("../tasks/store.ts");
      const { taskLine, templateLine } = await import("../tasks/list-view.ts");
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
    });

  task
    .command("show <id>")
    .description("one task (t-…) or template (r-…) in full, by any unique id prefix")
    .option("--json", "as JSON")
    .action(async (id: string, flags: { json?: boolean }) => {
      const { findTask } = await import("../tasks/store.ts");
      const { findTemplate } = await import("../tasks/operator-edits.ts");
      const { taskDetail, templateDetail } = await import("../tasks/list-view.ts");
      const paths = rosterPaths();
      const template = id.startsWith("r-");
      const one = template ? findTemplate(paths, id) : findTask(paths, id);
      if (flags.json) process.stdout.write(`${JSON.stringify(one, null, 2)}\n`);
      else if (template) process.stdout.write(templateDetail(findTemplate(paths, id)));
      else {
        const task = findTask(paths, id);
        const { readRecord, runDir } = await import("../runs/run-record.ts");
        const { readReport } = await import("../tasks/run-facts.ts");
        const run = task.run_id
          ? {
              ended_by: readRecord(runDir(paths.state, task.worker, task.run_id))?.ended_by,
              report: readReport(paths, task.worker, task.run_id),
            }
          : undefined;
        process.stdout.write(taskDetail(task, run));
      }
    });

  task
    .command("rm <id>")
    .description("retire a recurring template (r-…), or cancel a task (t-…) that has not started")
    .action(async (id: string) => {
      const { findTask } = await import("../tasks/store.ts");
      const { cancelTask, retireTemplate } = await import("../tasks/operator-edits.ts");
      const paths = rosterPaths();
      const said = id.startsWith("r-")
        ? await retireTemplate(paths, id)
        : await cancelTask(paths, findTask(paths, id), operator());
      process.stdout.write(`${said}\n`);
    });

  task
    .command("requeue <id>")
    .description("put a finished, failed, blocked or cancelled task back on the list as pending")
    .action(async (id: string) => {
      const { findTask } = await import("../tasks/store.ts");
      const { requeueTask } = await import("../tasks/operator-edits.ts");
      const paths = rosterPaths();
      process.stdout.write(`${await requeueTask(paths, findTask(paths, id), operator())}\n`);
    });
}

function listedWorkers(paths: ReturnType<typeof rosterPaths>): string[] {
  const root = join(paths.data, "workers");
  return existsSync(root) ? readdirSync(root).sort() : [];
}
