/**
 * `roster channel rm`: a channel's folder (its history, purpose, files and
 * the workers' per-channel stores) moves to data/archive/channel-<id>-<time>/,
 * never deleted, and the operator's designations of it are dropped, so a
 * channel made again under that id starts at the defaults. Refused while a
 * session runs in it: its box reads that folder.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { RosterError } from "../../ground/errors.ts";
import { archiveStamp, moveAside } from "../../ground/files/move-aside.ts";
import { liveRunsIn } from "../run-records/live-runs.ts";
import { forgetChannel, isDesignated, readDesignations } from "./designations.ts";
import { assertChannelId } from "./ids.ts";
import { groupOf } from "./links.ts";
import { channelDir } from "./store.ts";

export interface RemovedChannel {
  id: string;
  /** Where its folder went (undefined: it had none, only designations). */
  archive: string | undefined;
  /** The operator's trust or mode for it was dropped. */
  forgot: boolean;
}

export function channelArchive(paths: RosterPaths, id: string, now = new Date()): string {
  return join(paths.data, "archive", `channel-${id}-${archiveStamp(now)}`);
}

export async function removeChannel(
  paths: RosterPaths,
  id: string,
  now = new Date(),
): Promise<RemovedChannel> {
  assertChannelId(id);
  const dir = channelDir(paths, id);
  const designations = readDesignations(paths);
  if (designations.unreadable !== undefined)
    throw new RosterError(
      `the channel settings can't be read (${designations.unreadable}); nothing was moved`,
      { exitCode: 2, hint: "fix or remove the file by hand, then try again" },
    );
  const group = groupOf(paths, id);
  if (group)
    throw new RosterError(
      group.name === id
        ? `${id} is a linked channel of ${group.surfaces.join(", ")}; nothing was moved`
        : `${id} is linked (${group.name ? `in ${group.name}` : `with ${group.surfaces.filter((one) => one !== id).join(", ")}`}); nothing was moved`,
      { exitCode: 2, hint: "roster channel unlink each member first, then remove it" },
    );
  const designated = isDesignated(designations, id);
  if (!existsSync(dir) && !designated)
    throw new RosterError(`no channel "${id}"`, {
      exitCode: 2,
      hint: "roster channel ls lists them",
    });
  const live = liveRunsIn(paths, id);
  if (live.length)
    throw new RosterError(
      `${id} has a session going: ${live.join(", ")}; its box reads the channel's folder, so nothing was moved`,
      {
        exitCode: 2,
        hint: "it ends after a quiet spell (or when the server stops); then remove it",
      },
    );
  const archive = existsSync(dir) ? channelArchive(paths, id, now) : undefined;
  if (archive) {
    if (existsSync(archive))
      throw new RosterError(`${archive} already exists; try again in a second`, { exitCode: 2 });
    await moveAside(dir, archive);
  }
  if (designated) await forgetChannel(paths, id);
  return { id, archive, forgot: designated };
}
