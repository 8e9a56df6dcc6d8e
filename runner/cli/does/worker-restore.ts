/**
 * What `roster worker restore` does: list a worker's store snapshots, or put
 * one back after snapshotting the store as it is, so a restore can be undone.
 * The CLI only declares the command; this module is loaded when it runs.
 */
import { rosterPaths } from "../../ground/config/paths.ts";
import { RosterError } from "../../ground/errors.ts";
import { checkName } from "./worker.ts";

export interface RestoreFlags {
  list?: boolean;
  from?: string;
  before?: string;
  channel?: string;
  json?: boolean;
}

/** `roster worker restore`: the newest snapshot by default, or --from, --before, or --list. */
export async function restoreStoreCommand(name: string, flags: RestoreFlags): Promise<void> {
  checkName(name);
  if (flags.channel !== undefined) {
    const { assertChannelId } = await import("../../records/channels/ids.ts");
    assertChannelId(flags.channel);
  }
  const { existsSync } = await import("node:fs");
  const { describeTarget, listSnapshots, storeDir } = await import(
    "../../boundary/store/snapshots.ts"
  );
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
    const { formatSnapshots } = await import("../../boundary/store/snapshots-view.ts");
    const snapshots = listSnapshots(paths, target);
    process.stdout.write(
      flags.json
        ? `${JSON.stringify(snapshots)}\n`
        : `${formatSnapshots(snapshots, describeTarget(target))}\n`,
    );
    return;
  }
  const { restoreStore } = await import("../../boundary/store/restore.ts");
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
}
