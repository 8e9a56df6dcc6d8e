import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type Static, Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { platformTermsOf } from "../../ground/chat/terms.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { errorMessage, RosterError } from "../../ground/errors.ts";
import { replaceFileSync } from "../../ground/files/atomic-replace.ts";
import { withFileLock } from "../../ground/files/file-lock.ts";
import { assertChannelId, CHANNEL_ID_RULE, isChannelId, isDirectChannel } from "./ids.ts";
import { mergeIntoLinked } from "./link-merge.ts";
import { channelsDir } from "./store.ts";

/**
 * Linked channels: one person's direct surfaces (a Discord DM, a Slack DM, a
 * terminal) made one conversation. A linked channel has a name (`roster
 * channel link <name> <surface>…`): the name is its channel id, so its
 * history, purpose and the worker's channel store live under
 * data/channels/<name>/, and the server's session for any member is the
 * name's one session. Each message keeps the surface it came from, and the
 * worker is told to answer there. An older group has no name: its first
 * surface is its home and holds the history (the two-surface form `roster
 * channel link <surface> <other>` still makes one). Only direct surfaces
 * link: a room has many readers, and linking would hand one audience's
 * conversation to another. Linking merges conversation, never authority
 * (linked-trust.ts). data/channels/links.json, under its lock; the public
 * roster's spelling of the file (`{"channels": {name: [surfaces]}}`) reads
 * as named channels and is written back in ours.
 */
const Group = Type.Object({
  /** The linked channel's id; absent in an older group, whose home is its first surface. */
  name: Type.Optional(Type.String()),
  surfaces: Type.Array(Type.String(), { minItems: 1 }),
  linked_by: Type.String(),
  linked_at: Type.String(),
});
const LinksDocument = Type.Object({ groups: Type.Array(Group) });
const PublicLinks = Type.Object({
  channels: Type.Record(Type.String(), Type.Array(Type.String())),
});
type LinksDocument = Static<typeof LinksDocument>;
export type LinkGroup = Static<typeof Group>;

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
  if (Value.Check(PublicLinks, value) && !Value.Check(LinksDocument, value))
    return {
      groups: Object.entries(value.channels)
        .filter(([, surfaces]) => surfaces.length > 0)
        .map(([name, surfaces]) => ({
          name,
          surfaces,
          linked_by: "public roster",
          linked_at: "",
        })),
    };
  if (!Value.Check(LinksDocument, value)) {
    const first = Value.Errors(LinksDocument, value).First();
    throw new RosterError(
      `${linksFile(paths)}: ${first ? `${first.path || "/"}: ${first.message}` : "not a links document"}`,
    );
  }
  for (const group of value.groups)
    if (group.name !== undefined && !isChannelId(group.name))
      throw new RosterError(
        `${linksFile(paths)}: "${group.name}" is not a channel id: ${CHANNEL_ID_RULE}`,
      );
  return value;
}

export function linkGroups(paths: RosterPaths): LinkGroup[] {
  return readDocument(paths).groups;
}

/** The group a surface is in, or the linked channel of that name, if any. */
export function groupOf(paths: RosterPaths, id: string): LinkGroup | undefined {
  return linkGroups(paths).find((group) => group.name === id || group.surfaces.includes(id));
}

/** Where a group's conversation lives: its name, or an older group's first surface. */
export const homeOfGroup = (group: LinkGroup): string => group.name ?? group.surfaces[0] ?? "";

/** Where a surface's conversation lives: its linked channel's name (an older group's home), or itself. */
export function homeOf(paths: RosterPaths, surface: string): string {
  const group = groupOf(paths, surface);
  return group ? homeOfGroup(group) : surface;
}

/**
 * The surfaces a channel's input comes from: a linked channel's members when
 * `id` is its name, else `id` itself. What a run of that channel is judged by
 * (its origins): the name is no surface, the members are.
 */
export function surfacesOf(paths: RosterPaths, id: string): string[] {
  const group = linkGroups(paths).find((one) => one.name === id);
  return group ? [...group.surfaces] : [id];
}

/**
 * Why a name can't be a linked channel's, or undefined. The name is a channel
 * id of its own, and must not read as a surface's: a platform's prefix would
 * make it one platform's channel, and `-dm-` would make it direct (trusted and
 * woken by every message by default).
 */
export function badLinkName(name: string): string | undefined {
  if (!isChannelId(name)) return `"${name}" is not a channel name: ${CHANNEL_ID_RULE}`;
  const platform = platformTermsOf(name);
  if (platform)
    return `"${name}" looks like a ${platform.name} surface id (it starts with "${platform.channelPrefix}"): a linked channel's name must be a fresh name, like "ana"`;
  if (name.includes("-dm-"))
    return `"${name}" looks like a direct surface's id (it has "-dm-"): pick a fresh name for the linked channel`;
  return undefined;
}

/** Whether `roster channel link`'s first word is a surface (the older two-surface form) rather than a name. */
export const isSurfaceId = (id: string): boolean =>
  isChannelId(id) && platformTermsOf(id) !== undefined;

async function update<T>(paths: RosterPaths, change: (document: LinksDocument) => T): Promise<T> {
  mkdirSync(channelsDir(paths), { recursive: true, mode: 0o755 });
  const file = linksFile(paths);
  return withFileLock(`${file}.lock`, "the channel links", async () => {
    const document = readDocument(paths);
    const result = change(document);
    replaceFileSync(file, `${JSON.stringify(document, null, 2)}\n`, { mode: 0o644 });
    return result;
  });
}

function assertLinkable(surfaces: readonly string[]): void {
  for (const id of surfaces) {
    assertChannelId(id);
    if (!isDirectChannel(id))
      throw new RosterError(
        `${id} is not a direct surface (a DM or a terminal): only those link, a room has other readers`,
        { exitCode: 2 },
      );
  }
}

const othersIn = (group: LinkGroup, surface: string) =>
  group.name ?? group.surfaces.filter((one) => one !== surface).join(", ");

/**
 * Makes the linked channel `name` of these surfaces, or adds them to it. Each
 * newly joined surface's history, purpose and files fold into the channel's
 * (link-merge.ts), so a message on any member continues one conversation.
 */
export async function linkNamed(
  paths: RosterPaths,
  name: string,
  surfaces: readonly string[],
  by: string,
): Promise<LinkGroup> {
  const bad = badLinkName(name);
  if (bad) throw new RosterError(bad, { exitCode: 2 });
  if (!surfaces.length)
    throw new RosterError(`link ${name}: name at least one surface to link`, { exitCode: 2 });
  assertLinkable(surfaces);
  const { group, fresh } = await update(paths, (document) => {
    for (const surface of surfaces) {
      const theirs = document.groups.find(
        (one) => one.name !== name && one.surfaces.includes(surface),
      );
      if (theirs)
        throw new RosterError(
          `${surface} is linked with ${othersIn(theirs, surface)} already; unlink it first`,
          { exitCode: 2 },
        );
    }
    let group = document.groups.find((one) => one.name === name);
    if (!group) {
      group = { name, surfaces: [], linked_by: by, linked_at: new Date().toISOString() };
      document.groups.push(group);
    }
    const fresh = [...new Set(surfaces)].filter((one) => !group.surfaces.includes(one));
    group.surfaces.push(...fresh);
    return { group, fresh };
  });
  for (const surface of fresh) mergeIntoLinked(paths, name, surface);
  return group;
}

/** The older form: links `other` to `surface`'s conversation (joining its group, or making one with it as home). */
export async function linkSurfaces(
  paths: RosterPaths,
  surface: string,
  other: string,
  by: string,
): Promise<LinkGroup> {
  assertLinkable([surface, other]);
  if (surface === other)
    throw new RosterError(`${surface} can't be linked to itself`, { exitCode: 2 });
  return update(paths, (document) => {
    const mine = document.groups.find((one) => one.surfaces.includes(surface));
    const theirs = document.groups.find((one) => one.surfaces.includes(other));
    if (theirs && theirs !== mine)
      throw new RosterError(
        `${other} is linked with ${othersIn(theirs, other)} already; unlink it first`,
        { exitCode: 2 },
      );
    if (mine) {
      if (!mine.surfaces.includes(other)) {
        // a named channel's history is its own: a joining surface's folds in, as with its name
        if (mine.name) mergeIntoLinked(paths, mine.name, other);
        mine.surfaces.push(other);
      }
      return mine;
    }
    const made = { surfaces: [surface, other], linked_by: by, linked_at: new Date().toISOString() };
    document.groups.push(made);
    return made;
  });
}

/**
 * Takes a surface out of its group; the group before, if any. A linked
 * channel stays with its remaining members (with none, its folder stays and
 * the name may be linked again); an older group left with one surface ends.
 */
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
    document.groups = document.groups.filter((one) =>
      one.name ? one.surfaces.length >= 1 : one.surfaces.length >= 2,
    );
    return before;
  });
}

export function linkSaid(group: LinkGroup): string {
  if (group.name)
    return `linked: ${group.name} is one channel of ${group.surfaces.join(" + ")} (one history, purpose and store; trusted only while every member is)`;
  return `linked: ${group.surfaces.join(" + ")} are one conversation (its history is ${group.surfaces[0]}'s); each keeps its own trust`;
}

export function unlinkSaid(surface: string, before: LinkGroup | undefined): string {
  if (!before) return `${surface} was not linked`;
  if (before.name)
    return `${surface} left ${before.name} and starts a fresh conversation (the channel's history stays with ${before.name})`;
  return `${surface} is its own conversation again (the history so far stays with ${before.surfaces[0]})`;
}
