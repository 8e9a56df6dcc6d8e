import type { Command } from "commander";
import { rosterPaths } from "../config/paths.ts";
import { RosterError } from "../errors.ts";

// Implementations load when a command runs, so `roster --help` stays instant.

interface RestoreFlags {
  list?: boolean;
  from?: string;
  before?: string;
  channel?: string;
  json?: boolean;
}

const WORKER_NAME = /^[a-z0-9][a-z0-9_-]*$/;

/** `roster worker …`: one worker's own things (its store and its snapshots). */
export function registerWorkerCommands(program: Command): void {
  const worker = program.command("worker").description("a worker's store and its snapshots");

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
      if (!WORKER_NAME.test(name))
        throw new RosterError(
          `"${name}" is not a worker name: lower-case letters, digits, '_' or '-'`,
          {
            exitCode: 2,
          },
        );
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
