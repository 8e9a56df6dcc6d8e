import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type Static, Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { type RosterPaths, rosterPaths } from "../../ground/config/paths.ts";
import { replaceFileSync } from "../../ground/files/atomic-replace.ts";
import { withFileLock } from "../../ground/files/file-lock.ts";
import { assertChannelId } from "./ids.ts";
import { channelsDir } from "./store.ts";

/**
 * Whether a room is `public` (everyone in its server can read it) or
 * `private`, as its chat platform's own permissions say: the platform's
 * listener works it out for each room it hears from (services/chat/<platform>/)
 * and records it here, data/channels/classes.json, `{ "<channel id>":
 * { "class": …, "at": … } }`. A channel class's `public` / `private`
 * (channel-class.ts) and a connection edge's (ground/config/edge-scope.ts)
 * admit a room only by what is recorded: a room never classified, or one
 * whose class could not be read, is in neither (fail closed). Read from the
 * deployment's own data folder (ROSTER_ROOT, or the XDG default), where the
 * gateway and every listener of this deployment look.
 */
export const ROOM_CLASSES = ["public", "private"] as const;
export type RoomClass = (typeof ROOM_CLASSES)[number];

const ClassesDocument = Type.Record(
  Type.String(),
  Type.Object({
    class: Type.Union([Type.Literal("public"), Type.Literal("private")]),
    at: Type.String(),
  }),
);
type ClassesDocument = Static<typeof ClassesDocument>;

export const isRoomClass = (word: string): word is RoomClass =>
  (ROOM_CLASSES as readonly string[]).includes(word);

const classesFile = (paths: RosterPaths) => join(channelsDir(paths), "classes.json");

/** The recorded classes; a file that can't be read classifies nothing (every class then admits no room). */
function readClasses(paths: RosterPaths): ClassesDocument {
  try {
    const value: unknown = JSON.parse(readFileSync(classesFile(paths), "utf8"));
    return Value.Check(ClassesDocument, value) ? value : {};
  } catch {
    return {};
  }
}

/** A room's recorded class, or undefined when none is recorded. */
export function recordedClass(
  channelId: string,
  paths: RosterPaths = rosterPaths(),
): RoomClass | undefined {
  return readClasses(paths)[channelId]?.class;
}

/**
 * The recorded class of a platform's room by the platform's own id for it
 * (`<prefix>…-<surface id>`, as a request's path names it).
 */
export function recordedClassOfSurface(
  prefix: string,
  surfaceId: string,
  paths: RosterPaths = rosterPaths(),
): RoomClass | undefined {
  const tail = `-${surfaceId}`;
  for (const [id, entry] of Object.entries(readClasses(paths)))
    if (id.startsWith(prefix) && id.endsWith(tail)) return entry.class;
  return undefined;
}

/** Records a room's class (undefined: forgets it, as when it could not be read); writes only on a change. */
export async function recordClass(
  paths: RosterPaths,
  channelId: string,
  roomClass: RoomClass | undefined,
): Promise<void> {
  assertChannelId(channelId);
  if (readClasses(paths)[channelId]?.class === roomClass) return;
  mkdirSync(channelsDir(paths), { recursive: true, mode: 0o755 });
  const file = classesFile(paths);
  await withFileLock(`${file}.lock`, "the channel classes", async () => {
    const document = readClasses(paths);
    if (roomClass) document[channelId] = { class: roomClass, at: new Date().toISOString() };
    else delete document[channelId];
    replaceFileSync(file, `${JSON.stringify(document, null, 2)}\n`, { mode: 0o644 });
  });
}
