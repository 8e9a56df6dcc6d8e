import { existsSync, readdirSync, readFileSync, renameSync } from "node:fs";
import { join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { replaceFileSync } from "../../ground/files/atomic-replace.ts";
import { archiveStamp } from "../../ground/files/move-aside.ts";
import {
  CHANNEL_MODES,
  channelDir,
  ensureChannel,
  type MessageRecord,
  readMessages,
} from "./store.ts";

/**
 * A surface joining a linked channel brings its conversation along, once:
 * its history interleaves into the channel's by send time (each message
 * marked with the surface it came from, so the record still says where it was
 * said), its purpose becomes the channel's when the channel has none, and its
 * shared files move over (a name already there keeps the channel's). Nothing
 * is deleted: the surface's own history is renamed aside, which is also why
 * it starts afresh if it is unlinked later.
 */
export function mergeIntoLinked(paths: RosterPaths, name: string, surface: string): void {
  if (surface === name) return;
  const to = ensureChannel(paths, name);
  const from = channelDir(paths, surface);
  const history = join(from, "messages.jsonl");
  if (existsSync(history)) {
    const theirs = readMessages(paths, surface).map(
      (message): MessageRecord => ({ ...message, surface: message.surface ?? surface }),
    );
    if (theirs.length) {
      const ours = readMessages(paths, name);
      // stable: equal times keep the channel's messages first, each side in its own order
      const merged = [...ours, ...theirs].sort((a, b) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : 0));
      replaceFileSync(
        join(to, "messages.jsonl"),
        merged.map((message) => `${JSON.stringify(message)}\n`).join(""),
        { mode: CHANNEL_MODES.file },
      );
    }
    renameSync(history, join(from, `messages.linked-${name}-${archiveStamp(new Date())}.jsonl`));
  }
  const purpose = join(from, "purpose.md");
  const channelPurpose = join(to, "purpose.md");
  if (
    existsSync(purpose) &&
    readFileSync(purpose, "utf8").trim() &&
    !readFileSync(channelPurpose, "utf8").trim()
  )
    renameSync(purpose, channelPurpose);
  const files = join(from, "files");
  if (existsSync(files))
    for (const entry of readdirSync(files)) {
      const target = join(to, "files", entry);
      if (!existsSync(target)) renameSync(join(files, entry), target);
    }
}
