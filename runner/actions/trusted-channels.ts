import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { RosterPaths } from "../config/paths.ts";

/**
 * Channels the operator trusts (data/channels/settings.json, `trusted`: a list
 * of channel ids): a worker's sends and purpose edits there run without a
 * gate — the people in that room are the ones who would approve it. A file
 * that can't be read trusts nothing.
 */
export function trustedChannels(paths: RosterPaths): ReadonlySet<string> {
  const file = join(paths.data, "channels", "settings.json");
  if (!existsSync(file)) return new Set();
  try {
    const parsed = JSON.parse(readFileSync(file, "utf8")) as { trusted?: unknown };
    return new Set(
      Array.isArray(parsed.trusted)
        ? parsed.trusted.filter((id): id is string => typeof id === "string")
        : [],
    );
  } catch {
    return new Set();
  }
}

/** Executors whose payload names the channel it lands in. */
export const CHANNEL_EXECUTORS: ReadonlySet<string> = new Set([
  "slack",
  "discord",
  "term",
  "purpose",
]);
