import { createInterface } from "node:readline/promises";
import type { Command } from "commander";
import { rosterPaths } from "../config/paths.ts";
import { workerNameProblem } from "../config/worker-name.ts";
import { RosterError } from "../errors.ts";

// Implementations load when a command runs, so `roster --help` stays instant.

interface RestoreFlags {
  list?: boolean;
  from?: string;
  before?: string;
  channel?: string;
  json?: boolean;
}

/** A bad worker name refused before anything is read, by the loader's rule. */
function checkName(name: string): void {
  const problem = workerNameProblem(name);
  if (problem) throw new RosterError(problem, { exitCode: 2 });
}

/** Asks on the terminal; refuses when there is none to ask on. */
async function confirm(question: string, flag: string): Promise<boolean> {
  if (!process.stdin.isTTY)
    throw new RosterError(
      `not in a terminal, so nothing was asked and nothing changed: add ${flag}`,
      {
        exitCode: 2,
      },
    );
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
  } finally {
    rl.close();
  }
}

/** `roster worker …`: the workers themselves — add, list, show, remove — and their stores' snapshots. */
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
    .action(async (name: string, flags: { json?: boolean }) => {
      checkName(name);
      const { addWorker } = await import("../workers/add.ts");
      const added = await addWorker(rosterPaths(), name);
      process.stdout.write(
        flags.json
          ? `${JSON.stringify(added)}
`
          : `added worker ${name}:\n${added.created.map((path) => `  ${path}`).join("\n")}\nsay what it is for in its identity.md; roster run ${name} "…" runs it\n`,
      );
    });

  worker
    .command("ls")
    .description(
      "every worker: running or idle, its last run and outcome, queued tasks, open sessions, spent today",
    )
    .option("--json", "one JSON object per worker")
    .action(async (flags: { json?: boolean }) => {
      const { formatWorkerRows, workerRows } = await import("../workers/list.ts");
      const rows = workerRows(rosterPaths());
      if (flags.json) {
        for (const row of rows) process.stdout.write(`${JSON.stringify(row)}\n`);
        return;
      }
      process.stdout.write(`${formatWorkerRows(rows)}\n`);
    });

  worker
    .command("show <name>")
    .description(
      "one worker as the gateway sees it: its settings after narrowing by org.toml, the rules that apply to it, its trust and its channels",
    )
    .option("--json", "the same as JSON")
    .action(async (name: string, flags: { json?: boolean }) => {
      checkName(name);
      const { formatConfigError, loadConfig } = await import("../config/load.ts");
      const paths = rosterPaths();
      const config = loadConfig(paths.config, { vaultDir: paths.vault });
      if (config.errors.length)
        throw new RosterError(
          `config is invalid:\n${config.errors.map(formatConfigError).join("\n")}`,
          { exitCode: 2 },
        );
      const { formatWorkerDetail, workerDetail } = await import("../workers/show.ts");
      const detail = workerDetail(paths, config, name);
      if (!detail)
        throw new RosterError(`no worker named "${name}"`, {
          exitCode: 2,
          hint: "roster worker ls lists them",
        });
      if (flags.json) {
        process.stdout.write(`${JSON.stringify(detail)}\n`);
        return;
      }
      const { formatTrust } = await import("../actions/trust-view.ts");
      process.stdout.write(formatWorkerDetail(detail, formatTrust(name, detail.trust)));
    });

  worker
    .command("rm <name>")
    .description(
      "remove a worker: its config, data and run records move to data/archive/<name>-<time>/ (never deleted); refused while it runs",
    )
    .option("--yes", "do not ask")
    .option("--json", "print what was moved as JSON")
    .action(async (name: string, flags: { yes?: boolean; json?: boolean }) => {
      checkName(name);
      const paths = rosterPaths();
      const { archiveDir, archiveWorker } = await import("../workers/archive.ts");
      if (
        !flags.yes &&
        !(await confirm(
          `remove worker ${name}? its config and data move to ${archiveDir(paths, name)}`,
          "--yes",
        ))
      ) {
        process.stdout.write("nothing changed\n");
        return;
      }
      const archived = await archiveWorker(paths, name);
      process.stdout.write(
        flags.json
          ? `${JSON.stringify(archived)}\n`
          : `removed worker ${name}; nothing was deleted:\n${archived.moved.map(([from, to]) => `  ${from} -> ${to}`).join("\n")}\n`,
      );
    });

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
    .action(async (name: string, flags: RestoreFlags) => {
      checkName(name);
      if (flags.channel !== undefined) {
        const { assertChannelId } = await import("../channels/ids.ts");
        assertChannelId(flags.channel);
      }
      const { existsSync } = await import("node:fs");
      const { describeTarget, listSnapshots, storeDir } = await import("../store/snapshots.ts");
      const paths = rosterPaths();
      const target = { worker: name, ...(flags.channel ? { channel: flags.channel } : {}) };
      if (!existsSync(storeDir(paths, target)))
        throw new RosterError(`${describeTarget(target)} does not exist (no run has made it yet)`, {
          exitCode: 2,
        });
      if (flags.list) {
        if (flags.from !== undefined || flags.before !== undefined)
          throw new RosterError("--list restores nothing: leave out --from and --before", {
            exitCode: 2,
          });
        const { formatSnapshots } = await import("../store/snapshots-view.ts");
        const snapshots = listSnapshots(paths, target);
        process.stdout.write(
          flags.json
            ? `${JSON.stringify(snapshots)}\n`
            : `${formatSnapshots(snapshots, describeTarget(target))}\n`,
        );
        return;
      }
      const { restoreStore } = await import("../store/restore.ts");
      const result = await restoreStore(paths, target, {
        ...(flags.from !== undefined ? { from: flags.from } : {}),
        ...(flags.before !== undefined ? { before: flags.before } : {}),
      });
      if (flags.json) {
        process.stdout.write(
          `${JSON.stringify({ restored: result.restored.name, undo: result.undo ?? null, kept: result.kept })}\n`,
        );
        return;
      }
      const made = result.restored.run ? ` (made after run ${result.restored.run})` : "";
      const channel = flags.channel ? ` --channel ${flags.channel}` : "";
      process.stdout.write(
        `restored ${describeTarget(target)} from snapshot ${result.restored.name}${made}\n${
          result.undo
            ? `the store as it was is snapshot ${result.undo}: roster worker restore ${name}${channel} --from ${result.undo} undoes this\n`
            : ""
        }${
          result.kept.length
            ? `left in place, since no snapshot holds them: ${result.kept.slice(0, 10).join(", ")}${result.kept.length > 10 ? ` and ${result.kept.length - 10} more` : ""}\n`
            : ""
        }`,
      );
    });
}
