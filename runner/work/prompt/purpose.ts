import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { isChannelId } from "../../records/channels/ids.ts";

/**
 * A channel's purpose (data/channels/<id>/purpose.md, written by the
 * `purpose` executor or by hand) as a prompt carries it: read fresh each
 * time, bounded by `[context] purpose_max_chars`. A purpose is context, not
 * the run's task, so it never fails a run: a long one is cut with a marker
 * that says so, an unreadable or empty one is no purpose at all.
 */
export function readPurpose(paths: RosterPaths, channel: string): string | undefined {
  // the id becomes a path component: one that isn't a channel id has no purpose to read
  if (!isChannelId(channel)) return undefined;
  try {
    const text = readFileSync(join(paths.data, "channels", channel, "purpose.md"), "utf8").trim();
    return text || undefined;
  } catch {
    return undefined;
  }
}

/**
 * `text` at most `max` characters long, the marker included, when it had to
 * be cut; "" (no block) for a limit of 0. `limit` names what bound it.
 */
export function cutPurpose(
  text: string,
  max: number,
  limit = `[context] purpose_max_chars = ${max}`,
): string {
  if (text.length <= max) return text;
  if (max <= 0) return "";
  const marker = `\n[… purpose cut: ${text.length} characters, over ${limit}]`;
  // a limit too small for the whole marker still says that something was cut
  if (max <= marker.length + 20) return "[… purpose cut]".slice(0, max);
  return `${text.slice(0, max - marker.length).trimEnd()}${marker}`;
}

/** The words around a purpose, in the system prompt and in a turn that brings a new one. */
export function purposeIntro(channel: string): string {
  return `What channel ${channel} is for, as its purpose.md says; let it guide your work there.`;
}

/**
 * A turn's head when the purpose changed since the session's prompt or its
 * last turn: a JSON block like the turn's other blocks, so it reads as the
 * channel's record, not as a person's message.
 */
export function purposeTurnBlock(channel: string, purpose: string | undefined): string {
  return JSON.stringify({
    block: "purpose",
    channel,
    note: purpose
      ? `The channel's purpose changed; this replaces the PURPOSE block of your system prompt. ${purposeIntro(channel)}`
      : "The channel's purpose was cleared; the PURPOSE block of your system prompt no longer holds.",
    text: purpose ?? "",
  });
}
