import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type Static, Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { errorMessage, RosterError } from "../../ground/errors.ts";
import { replaceFileSync } from "../../ground/files/atomic-replace.ts";
import { withFileLock } from "../../ground/files/file-lock.ts";
import { assertChannelId, isDirectChannel } from "./ids.ts";
import { channelsDir } from "./store.ts";

/**
 * Linked surfaces: one person's direct surfaces (a Discord DM, a Slack DM,
 * a terminal) made one conversation. A link group's first surface is its
 * home: the group's history is the home's, and the server's session for any
 * surface of the group is the home's one session; each message keeps the
 * surface it came from, and the worker is told to answer there. Each surface
 * keeps its own trust (trust is always the target's). Only direct surfaces
 * link: a room has many readers, and linking would hand one audience's
 * conversation to another. data/channels/links.json, under its lock.
 */
const LinksDocument = Type.Object({
  groups: Type.Array(
    Type.Object({
      surfaces: Type.Array(Type.String(), { minItems: 2 }),
      linked_by: Type.String(),
      linked_at: Type.String(),
    }),
  ),
});
type LinksDocument = Static<typeof LinksDocument>;
export type LinkGroup = LinksDocument["groups"][number];

const linksFile = (paths: RosterPaths) => join(channelsDir(paths), "links.json");

function readDocument(paths: RosterPaths): LinksDocument {
  let text: string;
  try {
    text = readFileSync(linksFile(paths), "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { groups: [] };
    throw new RosterError(`${linksFile(paths)} can't be read: ${errorMessage(error)}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new RosterError(`${linksFile(paths)} is not JSON: ${errorMessage(error)}`);
  }
  if (!Value.Check(LinksDocument, value)) {
    const first = Value.Errors(LinksDocument, value).First();
    throw new RosterError(
      `${linksFile(paths)}: ${first ? `${first.path || "/"}: ${first.message}` : "not a links document"}`,
    );
  }
  return value;
}

export function linkGroups(paths: RosterPaths): LinkGroup[] {
  return readDocument(paths).groups;
}

/** The group a surface is in, if any. */
export function groupOf(paths: RosterPaths, surface: string): LinkGroup | undefined {
  return linkGroups(paths).find((group) => group.surfaces.includes(surface));
}

/** Where a surface's conversation lives: its group's home, or itself. */
export function homeOf(paths: RosterPaths, surface: string): string {
  return groupOf(paths, surface)?.surfaces[0] ?? surface;
}

async function update(
  paths: RosterPaths,
  change: (document: LinksDocument) => LinkGroup | undefined,
): Promise<LinkGroup | undefined> {
  mkdirSync(channelsDir(paths), { recursive: true, mode: 0o755 });
  const file = linksFile(paths);
  return withFileLock(`${file}.lock`, "the channel links", async () => {
    const document = readDocument(paths);
    const result = change(document);
    replaceFileSync(file, `${JSON.stringify(document, null, 2)}\n`, { mode: 0o644 });
    return result;
  });
}

/** Links `other` to `surface`'s conversation (joining its group, or making one with it as home). */
export async function linkSurfaces(
  paths: RosterPaths,
  surface: string,
  other: string,
  by: string,
): Promise<LinkGroup> {
  for (const id of [surface, other]) {
    assertChannelId(id);
    if (!isDirectChannel(id))
      throw new RosterError(
        `${id} is not a direct surface (a DM or a terminal): only those link, a room has other readers`,
        { exitCode: 2 },
      );
  }
  if (surface === other)
    throw new RosterError(`${surface} can't be linked to itself`, { exitCode: 2 });
  const group = await update(paths, (document) => {
    const mine = document.groups.find((one) => one.surfaces.includes(surface));
    const theirs = document.groups.find((one) => one.surfaces.includes(other));
    if (theirs && theirs !== mine)
      throw new RosterError(
        `${other} is linked with ${theirs.surfaces.filter((one) => one !== other).join(", ")} already; unlink it first`,
        { exitCode: 2 },
      );
    if (mine) {
      if (!mine.surfaces.includes(other)) mine.surfaces.push(other);
      return mine;
    }
    const made = { surfaces: [surface, other], linked_by: by, linked_at: new Date().toISOString() };
    document.groups.push(made);
    return made;
  });
  if (!group) throw new RosterError("the link was not made");
  return group;
}

/** Takes a surface out of its group (a group left with one surface ends); the group before, if any. */
export async function unlinkSurface(
  paths: RosterPaths,
  surface: string,
): Promise<LinkGroup | undefined> {
  assertChannelId(surface);
  return update(paths, (document) => {
    const group = document.groups.find((one) => one.surfaces.includes(surface));
    if (!group) return undefined;
    const before = { ...group, surfaces: [...group.surfaces] };
    group.surfaces = group.surfaces.filter((one) => one !== surface);
    document.groups = document.groups.filter((one) => one.surfaces.length >= 2);
    return before;
  });
}

export function linkSaid(group: LinkGroup): string {
  return `linked: ${group.surfaces.join(" + ")} are one conversation (its history is ${group.surfaces[0]}'s); each keeps its own trust`;
}

export function unlinkSaid(surface: string, before: LinkGroup | undefined): string {
  return before
    ? `${surface} is its own conversation again (the history so far stays with ${before.surfaces[0]})`
    : `${surface} was not linked`;
}
