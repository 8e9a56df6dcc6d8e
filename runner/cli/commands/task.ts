/**
 * `roster task add | relay | ls | show | rm | requeue`: declares the commands for a
 * worker's task list and its recurring templates (the server dispatches them)
 * — their arguments, flags and help. What each does lives in
 * runner/cli/does/task*.ts.
 */
import type { Command } from "commander";
import type { AddFlags } from "../../work/tasks/operator-add.ts";
import type { RelayFlags } from "../../work/tasks/relay.ts";

// Implementations load when a command runs, so `roster --help` stays instant.
const doesTask = () => import("../does/task.ts");

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
    .option(
      "--proactive",
      "file it as the worker's own, not the operator's: it waits while a budget limit is at its soft stop",
    )
    .option(
      "--repo <connection>",
      "code work in this gated host-repo connection (~/mnt/<connection>)",
    )
    .option(
      "--base <branch>",
      "with --repo: the branch it lands on (must be the connection's branch)",
    )
    .option("--json", "the task or template as JSON")
    .action(async (worker: string, prompt: string[], flags: AddFlags) =>
      (await doesTask()).addTaskCommand(worker, prompt, flags),
    );

  task
    .command("relay <worker> <message...>")
    .description(
      "file an inbound message as a task, quoted as untrusted outside content (never an instruction)",
    )
    .option("--from <who>", "who it came from, as a label the prompt quotes (not checked)")
    .option("--ceiling <minutes>", "wall-clock ceiling of its run in minutes (default 15)")
    .option("--json", "the task as JSON")
    .action(async (worker: string, message: string[], flags: RelayFlags) =>
      (await doesTask()).relayTaskCommand(worker, message, flags),
    );

  task
    .command("ls [worker]")
    .description("tasks, newest first, then recurring templates and their next fires")
    .option("--json", "one JSON task (or template, with kind) per line")
    .action(async (worker: string | undefined, flags: { json?: boolean }) =>
      (await doesTask()).listTasksCommand(worker, flags),
    );

  task
    .command("show <id>")
    .description("one task (t-…) or template (r-…) in full, by any unique id prefix")
    .option("--json", "as JSON")
    .action(async (id: string, flags: { json?: boolean }) =>
      (await doesTask()).showTaskCommand(id, flags),
    );

  task
    .command("rm <id>")
    .description("retire a recurring template (r-…), or cancel a task (t-…) that has not started")
    .action(async (id: string) => (await doesTask()).removeTaskCommand(id));

  task
    .command("requeue <id>")
    .description("put a finished, failed, blocked or cancelled task back on the list as pending")
    .action(async (id: string) => (await doesTask()).requeueTaskCommand(id));
}
