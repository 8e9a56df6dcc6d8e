import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type Static, Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { errorMessage, RosterError } from "../../ground/errors.ts";
import { replaceFileSync } from "../../ground/files/atomic-replace.ts";
import { withFileLock } from "../../ground/files/file-lock.ts";
import { assertChannelId, isDirectChannel } from "./ids.ts";
import { groupOf } from "./links.ts";
import { channelsDir } from "./store.ts";

/**
 * The operator's word on each channel, data/channels/settings.json:
 *   { "trusted": [ids], "untrusted": [ids], "modes": { id: "all" | "mention" } }
 * Every key is optional, so the older `{ "trusted": [...] }` still reads.
 *
 * Trusted: a worker's sends and purpose edits there run without a gate when
 * they come from a run of that channel's own (started there, or from a
 * surface linked with it: services/actions/trusted-channels.ts), since the
 * people in that room are the ones who would approve them. A channel starts
 * untrusted, except a direct one (a terminal or a DM, where the only other
 * party is the person who would approve); an `untrusted` entry overrides that
 * default and a `trusted` entry trusts any channel. An id in both lists is
 * untrusted: when the operator contradicts themselves, the answer is the safe one.
 *
 * Mode: whether every message wakes the worker ("all") or only ones that
 * mention it ("mention"); direct channels default to all, rooms to mention.
 *
 * A file that exists but can't be read trusts nothing, not even direct
 * channels: a mangled edit must never widen what runs unasked. Writes refuse
 * it rather than replace what the operator wrote.
 */
export const WakeMode = Type.Union([Type.Literal("all"), Type.Literal("mention")]);
export type WakeMode = Static<typeof WakeMode>;

export const WAKE_MODES: readonly WakeMode[] = ["all", "mention"];

export function isWakeMode(value: string): value is WakeMode {
  return (WAKE_MODES as readonly string[]).includes(value);
}

// unknown keys are allowed through: a newer roster's settings must survive an older one's write
const SettingsDocument = Type.Object({
  trusted: Type.Optional(Type.Array(Type.String())),
  untrusted: Type.Optional(Type.Array(Type.String())),
  modes: Type.Optional(Type.Record(Type.String(), WakeMode)),
});
type SettingsDocument = Static<typeof SettingsDocument> & Record<string, unknown>;

export interface Designations {
  trusted: ReadonlySet<string>;
  untrusted: ReadonlySet<string>;
  modes: ReadonlyMap<string, WakeMode>;
  /** Why settings.json couldn't be read; while set, no channel is trusted. */
  unreadable?: string;
}

/** One channel's standing and where it came from (the operator's entry, or the default). */
export interface Designation {
  id: string;
  trusted: boolean;
  /** "link": a linked channel's shared trust, which no one entry says alone. */
  trustedBy: "operator" | "default" | "unreadable" | "link";
  mode: WakeMode;
  modeBy: "operator" | "default";
}

export function settingsFile(paths: RosterPaths): string {
  return join(channelsDir(paths), "settings.json");
}

type Parsed = { document: SettingsDocument } | { problem: string };

function parseSettings(file: string): Parsed {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { document: {} };
    return { problem: errorMessage(error) };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { problem: `not JSON: ${errorMessage(error)}` };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return { problem: "not a JSON object" };
  if (!Value.Check(SettingsDocument, value)) {
    const first = Value.Errors(SettingsDocument, value).First();
    return {
      problem: first ? `${first.path || "/"}: ${first.message}` : "not a settings document",
    };
  }
  return { document: value as SettingsDocument };
}

export function readDesignations(paths: RosterPaths): Designations {
  const parsed = parseSettings(settingsFile(paths));
  if ("problem" in parsed)
    return {
      trusted: new Set(),
      untrusted: new Set(),
      modes: new Map(),
      unreadable: parsed.problem,
    };
  const { document } = parsed;
  return {
    trusted: new Set(document.trusted ?? []),
    untrusted: new Set(document.untrusted ?? []),
    modes: new Map(Object.entries(document.modes ?? {})),
  };
}

/**
 * A channel's standing under these designations. Ids are matched exactly, so
 * an older file's entries (say a platform's own id in capitals) keep working for
 * action trust even though they aren't channel ids roster would make.
 */
export function designationOf(designations: Designations, id: string): Designation {
  const direct = isDirectChannel(id);
  const explicitMode = designations.modes.get(id);
  const mode = {
    mode: explicitMode ?? (direct ? "all" : "mention"),
    modeBy: explicitMode ? "operator" : "default",
  } as const;
  if (designations.unreadable !== undefined)
    return { id, trusted: false, trustedBy: "unreadable", ...mode };
  if (designations.untrusted.has(id)) return { id, trusted: false, trustedBy: "operator", ...mode };
  if (designations.trusted.has(id)) return { id, trusted: true, trustedBy: "operator", ...mode };
  return { id, trusted: direct, trustedBy: "default", ...mode };
}

/**
 * Whether a channel is trusted, with links followed. A linked channel's trust
 * is shared: its name and each member are trusted only while every member is
 * by its own standing (and the name isn't untrusted), so linking never lends
 * one surface's trust to a conversation another surface feeds. An older,
 * unnamed group's surfaces keep their own. Links that can't be read link
 * nothing: each id is then judged alone.
 */
export function trustOf(paths: RosterPaths, designations: Designations, id: string): boolean {
  let group: ReturnType<typeof groupOf>;
  try {
    group = groupOf(paths, id);
  } catch {
    group = undefined;
  }
  if (!group?.name) return designationOf(designations, id).trusted;
  return (
    group.surfaces.length > 0 &&
    !designations.untrusted.has(group.name) &&
    group.surfaces.every((surface) => designationOf(designations, surface).trusted)
  );
}

export function isTrusted(paths: RosterPaths, id: string): boolean {
  return trustOf(paths, readDesignations(paths), id);
}

export function wakeMode(paths: RosterPaths, id: string): WakeMode {
  return designationOf(readDesignations(paths), id).mode;
}

/** Read, change and rewrite settings.json under its lock; the change sees every key the file had. */
async function updateSettings(
  paths: RosterPaths,
  id: string,
  change: (document: SettingsDocument) => void,
): Promise<Designation> {
  assertChannelId(id);
  const file = settingsFile(paths);
  mkdirSync(channelsDir(paths), { recursive: true, mode: 0o755 });
  return withFileLock(`${file}.lock`, "the channel settings", async () => {
    const parsed = parseSettings(file);
    if ("problem" in parsed)
      throw new RosterError(`${file} can't be read (${parsed.problem}); no channel is trusted`, {
        exitCode: 2,
        hint: "fix or remove the file by hand, then try again",
      });
    change(parsed.document);
    // not secret, and host-side tools running as another user may read it
    replaceFileSync(file, `${JSON.stringify(parsed.document, null, 2)}\n`, { mode: 0o644 });
    return designationOf(readDesignations(paths), id);
  });
}

const without = (list: string[] | undefined, id: string) =>
  (list ?? []).filter((entry) => entry !== id);

/** Trust or untrust a channel explicitly; the entry moves from one list to the other. */
export function setTrusted(paths: RosterPaths, id: string, trusted: boolean): Promise<Designation> {
  return updateSettings(paths, id, (document) => {
    const trustedList = without(document.trusted, id);
    const untrustedList = without(document.untrusted, id);
    (trusted ? trustedList : untrustedList).push(id);
    document.trusted = trustedList;
    document.untrusted = untrustedList;
  });
}

export async function setMode(
  paths: RosterPaths,
  id: string,
  mode: WakeMode,
): Promise<Designation> {
  if (!isWakeMode(mode))
    throw new RosterError(`mode must be one of ${WAKE_MODES.join(", ")}, not "${mode}"`, {
      exitCode: 2,
    });
  return updateSettings(paths, id, (document) => {
    document.modes = { ...document.modes, [id]: mode };
  });
}

/** Whether the operator said anything of this channel: a trust, an untrust, a mode. */
export function isDesignated(designations: Designations, id: string): boolean {
  return (
    designations.trusted.has(id) || designations.untrusted.has(id) || designations.modes.has(id)
  );
}

/** Drops every word the operator said of a channel, so one made again later starts at the defaults. */
export function forgetChannel(paths: RosterPaths, id: string): Promise<Designation> {
  return updateSettings(paths, id, (document) => {
    document.trusted = without(document.trusted, id);
    document.untrusted = without(document.untrusted, id);
    const { [id]: _dropped, ...modes } = document.modes ?? {};
    document.modes = modes;
  });
}

/** What a trust change did, in the words `roster channel` and `/channel` both say. */
export function trustSaid(designation: Designation): string {
  return designation.trusted
    ? `${designation.id} is trusted: its own runs' sends and purpose edits there run without a gate`
    : `${designation.id} is untrusted: sends and purpose edits there wait for approval`;
}

/** What a mode change did, in the same words everywhere. */
export function modeSaid(designation: Designation): string {
  return designation.mode === "all"
    ? `${designation.id}: every message wakes the worker`
    : `${designation.id}: only messages that mention the worker wake it`;
}
