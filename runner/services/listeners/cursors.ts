import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { replaceFileSync } from "../../ground/files/atomic-replace.ts";

/**
 * A listener's place in each channel: the platform id of the last message it
 * handed over (data/workers/<w>/channel-cursors/<channel>.json, written
 * durably). After a disconnect or a restart the adapter reads history after
 * it, so a message is handled exactly once: never skipped, never twice.
 */
export interface Cursor {
  /** The platform's own id for the channel (where history is read from). */
  platform_channel: string;
  last_id: string;
}

function dir(paths: RosterPaths, worker: string): string {
  return join(paths.data, "workers", worker, "channel-cursors");
}

export function readCursor(
  paths: RosterPaths,
  worker: string,
  channel: string,
): Cursor | undefined {
  try {
    const parsed = JSON.parse(
      readFileSync(join(dir(paths, worker), `${channel}.json`), "utf8"),
    ) as Partial<Cursor>;
    return typeof parsed.last_id === "string" && typeof parsed.platform_channel === "string"
      ? { platform_channel: parsed.platform_channel, last_id: parsed.last_id }
      : undefined;
  } catch {
    return undefined;
  }
}

export function writeCursor(
  paths: RosterPaths,
  worker: string,
  channel: string,
  cursor: Cursor,
): void {
  mkdirSync(dir(paths, worker), { recursive: true });
  replaceFileSync(join(dir(paths, worker), `${channel}.json`), `${JSON.stringify(cursor)}\n`, {
    mode: 0o644,
  });
}

/** The channels (ours ids) this worker has a cursor in, with a given prefix. */
export function cursorChannels(paths: RosterPaths, worker: string, prefix: string): string[] {
  const folder = dir(paths, worker);
  if (!existsSync(folder)) return [];
  return readdirSync(folder)
    .filter((name) => name.startsWith(prefix) && name.endsWith(".json"))
    .map((name) => name.slice(0, -".json".length));
}
