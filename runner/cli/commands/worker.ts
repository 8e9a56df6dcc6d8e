/**
 * `roster worker …`: declares the commands for the workers themselves — their
 * arguments, flags and help. What each does lives in
 * runner/cli/does/worker*.ts.
 */
import type { Command } from "commander";
import type { RestoreFlags } from "../does/worker-restore.ts";

// Implementations load when a command runs, so `roster --help` stays instant.
const doesWorker = () => import("../does/worker.ts");

/** `roster worker …`: the workers themselves — add, list, show, remove — their stores' snapshots and knowledge repos. */
export function registerWorkerCommands(program: Command): void {
  const worker = program
    .command("worker")
    .description("add, list, show and remove workers; restore a worker's store");

  worker
    .command("add <name>")
    .description(
      "add a worker: workers/<name>/worker.toml and identity.md, its store and its knowledge repo (the config is validated first)",
    )
    .option("--json", "print what was made as JSON")
    .action(async (name: string, flags: { json?: boolean }) =>
      (await doesWorker()).addWorkerCommand(name, flags),
    );

  worker
    .command("ls")
    .description(
      "every worker: running or idle, its last run and outcome, queued tasks, open sessions, spent today",
    )
    .option("--json", "one JSON object per worker")
    .action(async (flags: { json?: boolean }) => (await doesWorker()).listWorkersCommand(flags));

  worker
    .command("show <name>")
    .description(
      "one worker as the gateway sees it: its settings after narrowing by org.toml, the rules that apply to it, its trust and its channels",
    )
    .option("--json", "the same as JSON")
    .action(async (name: string, flags: { json?: boolean }) =>
      (await doesWorker()).showWorkerCommand(name, flags),
    );

  worker
    .command("rm <name>")
    .description(
      "remove a worker: its config, data and run records move to data/archive/<name>-<time>/ (never deleted); refused while it runs",
    )
    .option("--yes", "do not ask")
    .option("--json", "print what was moved as JSON")
    .action(async (name: string, flags: { yes?: boolean; json?: boolean }) =>
      (await doesWorker()).removeWorkerCommand(name, flags),
    );

  worker
    .command("pause <name> [why...]")
    .description("start no box of a worker until it is resumed (one going goes on)")
    .action(async (name: string, why: string[]) =>
      (await doesWorker()).pauseWorkerCommand(name, why.join(" ")),
    );

  worker
    .command("resume <name>")
    .description("let a paused worker run again")
    .action(async (name: string) => (await doesWorker()).resumeWorkerCommand(name));

  worker
    .command("knowledge <name>")
    .description(
      'the path of the worker\'s knowledge repo (a bare git repo): git -C "$(roster worker knowledge <name>)" log',
    )
    .option("--json", "its path and head commit as JSON")
    .action(async (name: string, flags: { json?: boolean }) =>
      (await doesWorker()).knowledgeCommand(name, flags),
    );

  worker
    .command("restore <worker>")
    .description(
      "put back a snapshot of the worker's store (the newest by default); the store as it is now is snapshotted first, so a restore can be undone",
    )
    .option("--list", "list the snapshots, each with the run that made it, and restore nothing")
    .option("--from <snapshot>", "that snapshot (a name from --list, or a unique prefix)")
    .option("--before <run>", "the store as it was before that run (undoes one bad run)")
    .option("--channel <id>", "the worker's store for that channel (~/channel/store) instead")
    .option("--json", "print the result as JSON")
    .action(async (name: string, flags: RestoreFlags) =>
      (await import("../does/worker-restore.ts")).restoreStoreCommand(name, flags),
    );
}
