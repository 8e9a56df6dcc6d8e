import {
  chmodSync,
  type Dirent,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { type Static, Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { appendJsonLine } from "../../ground/files/append-line.ts";
import { eachLineAcross, linesFromEndAcross } from "../../ground/files/rotation/read-across.ts";
import { assertChannelId, isChannelId } from "./ids.ts";

/**
 * A channel's record on the host, data/channels/<id>/:
 *   messages.jsonl  its history, one message per line, append-only (with the
 *                   files rotated out of it: messages.<stamp>.jsonl[.gz])
 *   purpose.md      what the channel is for (empty until someone says)
 *   files/          attachments people shared there
 *   store/          where a worker's own per-channel folder is mounted
 * A box sees this folder through a read-only mount as its non-root user while
 * the host may write it as root, so everything here is world-readable (dirs
 * 0755, files 0644) and modes are set explicitly rather than left to umask.
 */
export const CHANNEL_MODES = { file: 0o644, dir: 0o755 } as const;

export const MessageRole = Type.Union([
  Type.Literal("user"),
  Type.Literal("worker"),
  Type.Literal("bot"),
  Type.Literal("system"),
]);
export type MessageRole = Static<typeof MessageRole>;

export const MessageRecord = Type.Object({
  ts: Type.String(),
  author_id: Type.String(),
  author: Type.String(),
  role: MessageRole,
  content: Type.String(),
  attachments: Type.Array(Type.Unknown()),
  /** In a linked group's home: the surface it came from, when not the home itself. */
  surface: Type.Optional(Type.String()),
});
export type MessageRecord = Static<typeof MessageRecord>;

export function channelsDir(paths: RosterPaths): string {
  return join(paths.data, "channels");
}

export function channelDir(paths: RosterPaths, id: string): string {
  // the id becomes a path component: never let one climb out of channels/
  assertChannelId(id);
  return join(channelsDir(paths), id);
}

/** chmod only when it differs, so a folder someone else owns but already right isn't an error. */
function ensureMode(path: string, mode: number): void {
  if ((statSync(path).mode & 0o777) !== mode) chmodSync(path, mode);
}

function ensureDirectory(path: string): void {
  mkdirSync(path, { recursive: true, mode: CHANNEL_MODES.dir });
  ensureMode(path, CHANNEL_MODES.dir);
}

function ensureFile(path: string): void {
  // "a" creates it when missing and never truncates what another writer put there
  if (!existsSync(path)) writeFileSync(path, "", { flag: "a", mode: CHANNEL_MODES.file });
  ensureMode(path, CHANNEL_MODES.file);
}

/**
 * Creates the channel's folder and everything in it, and repairs modes left
 * by older writers. store/ stays empty: it only has to exist because a
 * mountpoint inside a read-only mount can't be created at run time.
 */
export function ensureChannel(paths: RosterPaths, id: string): string {
  const dir = channelDir(paths, id);
  ensureDirectory(channelsDir(paths));
  ensureDirectory(dir);
  ensureDirectory(join(dir, "files"));
  ensureDirectory(join(dir, "store"));
  ensureFile(join(dir, "messages.jsonl"));
  ensureFile(join(dir, "purpose.md"));
  return dir;
}

/** The channel's live history file (rotated files sit beside it: ground/files/rotation). */
export function messagesFile(paths: RosterPaths, id: string): string {
  return join(channelDir(paths, id), "messages.jsonl");
}

/** One message onto the channel's history, in a single append so lines never tear or interleave. */
export function appendMessage(paths: RosterPaths, id: string, record: MessageRecord): void {
  const dir = ensureChannel(paths, id);
  appendJsonLine(join(dir, "messages.jsonl"), record, CHANNEL_MODES);
}

/** The most of a history's end a read of its last messages looks at, however long the channel has lived. */
const LAST_BUDGET_BYTES = 16 * 1024 * 1024;

function messageOf(line: string): MessageRecord | undefined {
  if (!line.trim()) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return undefined;
  }
  return Value.Check(MessageRecord, parsed) ? parsed : undefined;
}

/**
 * The channel's history, oldest first (the last `last` when given, read
 * from its end: at most LAST_BUDGET_BYTES of it), across the files
 * `[retention.channel]` rotated out of it. A line that isn't a whole
 * message — cut short by a crash, or written by hand — is skipped: one bad
 * line must not take the rest of the history with it.
 */
export function readMessages(
  paths: RosterPaths,
  id: string,
  options: { last?: number } = {},
): MessageRecord[] {
  const file = messagesFile(paths, id);
  const records: MessageRecord[] = [];
  const { last } = options;
  if (last === undefined) {
    eachLineAcross(file, (line) => {
      const message = messageOf(line);
      if (message) records.push(message);
    });
    return records;
  }
  if (last <= 0) return records;
  linesFromEndAcross(
    file,
    (line) => {
      const message = messageOf(line);
      if (message) records.push(message);
      return records.length < last;
    },
    LAST_BUDGET_BYTES,
  );
  return records.reverse();
}

/** The text of purpose.md, or undefined when nobody has said what the channel is for. */
export function readPurpose(paths: RosterPaths, id: string): string | undefined {
  try {
    const text = readFileSync(join(channelDir(paths, id), "purpose.md"), "utf8");
    return text.trim() ? text : undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/** Ids of the channels that have a folder, sorted; anything else in channels/ is not a channel. */
export function listChannels(paths: RosterPaths): string[] {
  let entries: Dirent[];
  try {
    entries = readdirSync(channelsDir(paths), { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
  return entries
    .filter((entry) => entry.isDirectory() && isChannelId(entry.name))
    .map((entry) => entry.name)
    .sort();
}
