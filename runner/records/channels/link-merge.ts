import { existsSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { basename, join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { replaceFileSync } from "../../ground/files/atomic-replace.ts";
import { archiveStamp } from "../../ground/files/move-aside.ts";
import { logSegments } from "../../ground/files/rotation/segments.ts";
import {
  CHANNEL_MODES,
  channelDir,
  ensureChannel,
  type MessageRecord,
  messagesFile,
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
 *
 * Both histories are read whole, across the files retention rotated out of
 * them, and the merge becomes the channel's live file: the channel's own
 * rotated files are then removed (every line of them is in it, once) and
 * the surface's are renamed aside with its live file, under names that are
 * no segment of either log, so nothing reads a message twice. The next
 * sweep rotates the merged file again if it is past `max_file`.
 */
export function mergeIntoLinked(paths: RosterPaths, name: string, surface: string): void {
  if (surface === name) return;
  const to = ensureChannel(paths, name);
  const from = channelDir(paths, surface);
  const history = messagesFile(paths, surface);
  const segments = logSegments(history);
  if (segments.length) {
    const theirs = readMessages(paths, surface).map(
      (message): MessageRecord => ({ ...message, surface: message.surface ?? surface }),
    );
    if (theirs.length) {
      const home = messagesFile(paths, name);
      const ourSegments = logSegments(home).filter((one) => one.rotatedAt !== undefined);
      const ours = readMessages(paths, name);
      // stable: equal times keep the channel's messages first, each side in its own order
      const merged = [...ours, ...theirs].sort((a, b) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : 0));
      replaceFileSync(home, merged.map((message) => `${JSON.stringify(message)}\n`).join(""), {
        mode: CHANNEL_MODES.file,
      });
      // only after the merge is in place: a crash before this reads some messages twice, never loses one
      for (const segment of ourSegments) rmSync(segment.path, { force: true });
    }
    const aside = `messages.linked-${name}-${archiveStamp(new Date())}`;
    for (const segment of segments) {
      // messages.<stamp>.jsonl[.gz] → messages.linked-<name>-<when>.<stamp>.jsonl[.gz]: kept in order, and no segment
      const target =
        segment.rotatedAt === undefined
          ? `${aside}.jsonl`
          : basename(segment.path).replace(/^messages\./, `${aside}.`);
      renameSync(segment.path, join(from, target));
    }
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
