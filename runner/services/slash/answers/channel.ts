import {
  designationOf,
  isWakeMode,
  modeSaid,
  readDesignations,
  setMode,
  setTrusted,
  trustSaid,
  WAKE_MODES,
} from "../../../records/channels/designations.ts";
import { isDirectChannel } from "../../../records/channels/ids.ts";
import {
  groupOf,
  linkSaid,
  linkSurfaces,
  unlinkSaid,
  unlinkSurface,
} from "../../../records/channels/links.ts";
import { readPurpose } from "../../../records/channels/store.ts";
import { platformOfChannel } from "../../chat/platforms.ts";
import { type CommandAnswer, type CommandContext, CommandRefused } from "../context.ts";

/** `/channel`: its standing and purpose; `trust`, `untrust`, `mode all|mention` change it, as `roster channel` does. */
export async function channelAnswer(
  context: CommandContext,
  sub: string,
  args: Record<string, string>,
): Promise<CommandAnswer> {
  const { paths, channel } = context;
  if (!channel) return { text: "this surface is not a channel" };
  const by = `(by ${context.asker.user})`;
  if (sub === "trust" || sub === "untrust")
    return {
      text: `${trustSaid(await setTrusted(paths, channel, sub === "trust"))} ${by}`,
      room: true,
    };
  if (sub === "mode") {
    const mode = args.mode ?? "";
    if (!isWakeMode(mode)) return { text: `mode: ${WAKE_MODES.join(" or ")}, not "${mode}"` };
    return { text: `${modeSaid(await setMode(paths, channel, mode))} ${by}`, room: true };
  }
  if (sub === "link") {
    const other = args.other ?? "";
    // a room never links (linkSurfaces says so); else each surface must be the asker's
    if (isDirectChannel(channel) && isDirectChannel(other))
      for (const surface of [channel, other]) mustOwn(context, surface);
    const group = await linkSurfaces(paths, channel, other, context.asker.user);
    return { text: linkSaid(group) };
  }
  if (sub === "unlink") {
    return { text: unlinkSaid(channel, await unlinkSurface(paths, channel)) };
  }
  const standing = designationOf(readDesignations(paths), channel);
  const group = groupOf(paths, channel);
  // a linked channel's purpose is its name's, shared by every member
  const purpose = readPurpose(paths, group?.name ?? channel)?.trim();
  return {
    text: [
      `channel   ${channel}`,
      `trusted   ${standing.trusted ? "yes" : "no"}${standing.trustedBy === "operator" ? "" : ` (${standing.trustedBy})`}`,
      `mode      ${standing.mode}${standing.modeBy === "operator" ? "" : " (default)"}`,
      `purpose   ${purpose ? purpose.split("\n")[0] : "(none yet)"}`,
      ...(group
        ? [
            group.name
              ? `linked    ${group.name}: ${group.surfaces.join(", ")}`
              : `linked    ${group.surfaces.filter((one) => one !== channel).join(", ")}`,
          ]
        : []),
    ].join("\n"),
  };
}

/**
 * Only a surface's own person joins it into a conversation: the linked group's
 * home holds everyone's history and session, so linking someone else's DM (or
 * the operator's terminal) would hand it to the asker. The terminal is the
 * operator's, who may link any surfaces there.
 */
function mustOwn(context: CommandContext, surface: string): void {
  const asker = context.asker.user;
  if (asker.startsWith("term:")) return;
  const person = platformOfChannel(surface)?.personOf?.(surface);
  if (person?.toLowerCase() === asker.toLowerCase()) return;
  throw new CommandRefused(
    `${surface} is not yours: from chat only surfaces you are the person in link (the operator links others at the terminal, roster channel link)`,
  );
}
