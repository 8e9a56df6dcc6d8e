/**
 * What `roster channel trust | untrust | set | link | unlink | rm` do: the
 * operator's word on a channel — whether sends there run unasked, which
 * messages wake the worker, which surfaces are one conversation. The CLI only declares these commands; this module is loaded when one runs.
 */
import { rosterPaths } from "../../ground/config/paths.ts";
import { operatorName } from "../../ground/operator.ts";

/** `roster channel trust` / `untrust`: sends and purpose edits there run unasked, or wait for approval. */
export async function trustChannelCommand(verb: "trust" | "untrust", id: string): Promise<void> {
  const { setTrusted, trustSaid } = await import("../../records/channels/designations.ts");
  const designation = await setTrusted(rosterPaths(), id, verb === "trust");
  process.stdout.write(`${trustSaid(designation)}\n`);
}

/** `roster channel set`: the one setting there is, mode all|mention. */
export async function setChannelCommand(id: string, key: string, value: string): Promise<void> {
  const { RosterError } = await import("../../ground/errors.ts");
  const { assertChannelId } = await import("../../records/channels/ids.ts");
  const { isWakeMode, modeSaid, setMode, WAKE_MODES } = await import(
    "../../records/channels/designations.ts"
  );
  assertChannelId(id);
  if (key !== "mode")
    throw new RosterError(
      `unknown setting "${key}": the only one is mode (${WAKE_MODES.join("|")})`,
      { exitCode: 2 },
    );
  if (!isWakeMode(value))
    throw new RosterError(`mode must be ${WAKE_MODES.join(" or ")}, not "${value}"`, {
      exitCode: 2,
    });
  const designation = await setMode(rosterPaths(), id, value);
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

/** `roster channel link`: two direct surfaces become one conversation. */
export async function linkChannelCommand(
  id: string,
  other: string,
  flags: { json?: boolean },
): Promise<void> {
  const { linkSaid, linkSurfaces } = await import("../../records/channels/links.ts");
  const group = await linkSurfaces(rosterPaths(), id, other, operatorName());
  process.stdout.write(flags.json ? `${JSON.stringify(group)}\n` : `${linkSaid(group)}\n`);
}

/** `roster channel unlink`: a surface leaves its link group. */
export async function unlinkChannelCommand(id: string): Promise<void> {
  const { unlinkSaid, unlinkSurface } = await import("../../records/channels/links.ts");
  process.stdout.write(`${unlinkSaid(id, await unlinkSurface(rosterPaths(), id))}\n`);
}
