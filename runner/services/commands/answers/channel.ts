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
import {
  groupOf,
  linkSaid,
  linkSurfaces,
  unlinkSaid,
  unlinkSurface,
} from "../../../records/channels/links.ts";
import { readPurpose } from "../../../records/channels/store.ts";
import type { CommandAnswer, CommandContext } from "../context.ts";

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
    const group = await linkSurfaces(paths, channel, args.other ?? "", context.asker.user);
    return { text: linkSaid(group) };
  }
  if (sub === "unlink") {
    return { text: unlinkSaid(channel, await unlinkSurface(paths, channel)) };
  }
  const standing = designationOf(readDesignations(paths), channel);
  const group = groupOf(paths, channel);
  const purpose = readPurpose(paths, channel)?.trim();
  return {
    text: [
      `channel   ${channel}`,
      `trusted   ${standing.trusted ? "yes" : "no"}${standing.trustedBy === "operator" ? "" : ` (${standing.trustedBy})`}`,
      `mode      ${standing.mode}${standing.modeBy === "operator" ? "" : " (default)"}`,
      `purpose   ${purpose ? purpose.split("\n")[0] : "(none yet)"}`,
      ...(group ? [`linked    ${group.surfaces.filter((one) => one !== channel).join(", ")}`] : []),
    ].join("\n"),
  };
}
