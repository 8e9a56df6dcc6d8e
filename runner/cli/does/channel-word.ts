/**
 * What `roster channel trust | untrust | set | link | unlink | rm` do: the
 * operator's word on a channel — whether sends there run unasked, which
 * messages wake the worker, which surfaces are one conversation. The CLI only declares these commands; this module is loaded when one runs.
 */
import { rosterPaths } from "../../ground/config/paths.ts";
import { operatorName } from "../../ground/operator.ts";

/**
 * `roster channel trust` / `untrust`: sends and purpose edits there run unasked, or wait for
 * approval. A linked channel's name sets every member: its trust is shared.
 */
export async function trustChannelCommand(verb: "trust" | "untrust", id: string): Promise<void> {
  const { isTrusted, setTrusted, trustSaid } = await import(
    "../../records/channels/designations.ts"
  );
  const { groupOf } = await import("../../records/channels/links.ts");
  const paths = rosterPaths();
  const group = groupOf(paths, id);
  if (group?.name === id) {
    for (const surface of group.surfaces) await setTrusted(paths, surface, verb === "trust");
    await setTrusted(paths, id, verb === "trust");
    process.stdout.write(
      `${id} (${group.surfaces.join(" + ")}) is ${isTrusted(paths, id) ? "trusted: its own runs' sends and purpose edits there run without a gate" : "untrusted: sends and purpose edits there wait for approval"}\n`,
    );
    return;
  }
  const designation = await setTrusted(paths, id, verb === "trust");
  process.stdout.write(`${trustSaid(designation)}\n`);
  if (group?.name)
    process.stdout.write(
      `(${id} is linked in ${group.name}, whose trust is shared: ${group.name} is ${isTrusted(paths, id) ? "trusted" : "untrusted"}, trusted only while every member is)\n`,
    );
}

/** The keys `roster channel set` takes, each with what it means. */
const SET_KEYS = [
  {
    key: "mode",
    values: "all|mention",
    meaning: "which messages wake the worker: every one, or only those that mention it",
  },
] as const;

/** `roster channel set`: the one setting there is, mode all|mention; with no key, the keys and their values. */
export async function setChannelCommand(
  id: string,
  key: string | undefined,
  value: string | undefined,
  flags: { json?: boolean } = {},
): Promise<void> {
  const { RosterError } = await import("../../ground/errors.ts");
  const { assertChannelId } = await import("../../records/channels/ids.ts");
  const { designationOf, isWakeMode, modeSaid, readDesignations, setMode, WAKE_MODES } =
    await import("../../records/channels/designations.ts");
  assertChannelId(id);
  const paths = rosterPaths();
  if (key === undefined) {
    const designation = designationOf(readDesignations(paths), id);
    const rows = SET_KEYS.map((one) => ({
      key: one.key,
      value: designation.mode,
      set_by: designation.modeBy,
      values: one.values,
      meaning: one.meaning,
    }));
    if (flags.json) {
      process.stdout.write(`${JSON.stringify({ id, keys: rows })}\n`);
      return;
    }
    const { columns } = await import("../../ground/text/table.ts");
    process.stdout.write(
      `${columns([
        ["KEY", "VALUE", "VALUES", "MEANING"],
        ...rows.map((row) => [
          row.key,
          `${row.value}${row.set_by === "default" ? " (default)" : ""}`,
          row.values,
          row.meaning,
        ]),
      ])}\nset one: roster channel set ${id} <key> <value>\n`,
    );
    return;
  }
  if (key !== "mode")
    throw new RosterError(
      `unknown setting "${key}": the only one is mode (${WAKE_MODES.join("|")})`,
      { exitCode: 2, hint: `\`roster channel set ${id}\` lists the keys` },
    );
  if (value === undefined)
    throw new RosterError(`mode needs a value: ${WAKE_MODES.join(" or ")}`, { exitCode: 2 });
  if (!isWakeMode(value))
    throw new RosterError(`mode must be ${WAKE_MODES.join(" or ")}, not "${value}"`, {
      exitCode: 2,
    });
  const designation = await setMode(paths, id, value);
  process.stdout.write(`${modeSaid(designation)}\n`);
}

/** `roster channel rm`: its folder to the archive and its designations dropped; asks unless --yes. */
export async function removeChannelCommand(
  id: string,
  flags: { yes?: boolean; json?: boolean },
): Promise<void> {
  const { assertChannelId } = await import("../../records/channels/ids.ts");
  const { confirmedUnless } = await import("../../ground/confirm.ts");
  const { channelArchive, removeChannel } = await import("../../records/channels/remove.ts");
  assertChannelId(id);
  const paths = rosterPaths();
  const question = `remove channel ${id}? its history, purpose and files move to ${channelArchive(paths, id)}`;
  if (!(await confirmedUnless(flags.yes, question))) return;
  const removed = await removeChannel(paths, id);
  process.stdout.write(
    flags.json
      ? `${JSON.stringify(removed)}\n`
      : `removed channel ${id}; nothing was deleted${removed.archive ? `: its folder is now ${removed.archive}` : ""}${removed.forgot ? "; its trust and mode are back to the defaults" : ""}\n`,
  );
}

/**
 * `roster channel link <name> <surface>…`: one linked channel of these surfaces. When the
 * first word is itself a surface id, the older form: the others join its conversation
 * (its history, each surface's own trust).
 */
export async function linkChannelCommand(
  name: string,
  surfaces: string[],
  flags: { json?: boolean },
): Promise<void> {
  const { isSurfaceId, linkNamed, linkSaid, linkSurfaces } = await import(
    "../../records/channels/links.ts"
  );
  const paths = rosterPaths();
  let group: Awaited<ReturnType<typeof linkNamed>> | undefined;
  const [other, ...more] = surfaces;
  // two surface ids and nothing else: the older form; any other first word is a name (checked there)
  if (other !== undefined && !more.length && isSurfaceId(name) && isSurfaceId(other))
    group = await linkSurfaces(paths, name, other, operatorName());
  else group = await linkNamed(paths, name, surfaces, operatorName());
  if (!group) return;
  process.stdout.write(flags.json ? `${JSON.stringify(group)}\n` : `${linkSaid(group)}\n`);
}

/** `roster channel unlink`: a surface leaves its linked channel. */
export async function unlinkChannelCommand(
  surface: string,
  flags: { json?: boolean } = {},
): Promise<void> {
  const { unlinkSaid, unlinkSurface } = await import("../../records/channels/links.ts");
  const before = await unlinkSurface(rosterPaths(), surface);
  process.stdout.write(
    flags.json
      ? `${JSON.stringify({ surface, left: before ?? null })}\n`
      : `${unlinkSaid(surface, before)}\n`,
  );
}
