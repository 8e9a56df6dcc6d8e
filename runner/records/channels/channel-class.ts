import { platformTermsOf } from "../../ground/chat/terms.ts";
import type { ChannelClass, Surface } from "../../ground/config/channel-class-schema.ts";
import { isChannelId, isDirectChannel } from "./ids.ts";
import { isRoomClass, recordedClass } from "./surface-class.ts";

/**
 * Whether a run's origins fall in a class of channels (ground/config/
 * channel-class-schema.ts). Every origin must: a run that carried a room's
 * conversation and a DM's is judged by both. A run with no origin is of the
 * surface `none` and of no server. Origins that aren't known (a token that
 * doesn't say) fall in no class. A channel's surface is its platform's own
 * kind when it declares one (the terminal's `term`), else `dm` or `room`.
 */
export function surfaceOf(channel: string): Surface {
  const own = platformTermsOf(channel)?.surface;
  if (own) return own;
  return isDirectChannel(channel) ? "dm" : "room";
}

/**
 * The server (guild, workspace) a channel is in, `<platform>-<server id>`, as
 * its platform declares it (ground/chat/terms.ts); a DM with no server or a
 * terminal is in none.
 */
export function serverOf(channel: string): string | undefined {
  return platformTermsOf(channel)?.serverOf?.(channel);
}

export function classAdmits(
  channels: ChannelClass,
  origins: readonly string[] | undefined,
): boolean {
  if (origins === undefined) return false;
  if (origins.length === 0)
    return !channels.servers && (!channels.surfaces || channels.surfaces.includes("none"));
  return origins.every((origin) => {
    // provenance that could not be known ("task:<id>") is in no class
    if (!isChannelId(origin)) return false;
    if (channels.surfaces && !surfaceAdmits(channels.surfaces, origin)) return false;
    if (!channels.servers) return true;
    const server = serverOf(origin);
    return server !== undefined && channels.servers.includes(server);
  });
}

/**
 * Whether one origin is on a class's surfaces list: by its kind, as the one
 * channel named (its roster id, or its platform's own id for it), or, for a
 * room, by the class (`public`, `private`) its listener recorded for it.
 */
function surfaceAdmits(surfaces: readonly string[], origin: string): boolean {
  const kind = surfaceOf(origin);
  if (surfaces.includes(kind) || surfaces.includes(origin)) return true;
  const place = platformTermsOf(origin)?.connection?.edgeScope?.placeOf(origin);
  if (place && "surface" in place && surfaces.includes(place.surface)) return true;
  if (kind !== "room" || !surfaces.some(isRoomClass)) return false;
  const recorded = recordedClass(origin);
  return recorded !== undefined && surfaces.includes(recorded);
}

/** The class in words, for a refusal. */
export function classSaid(channels: ChannelClass): string {
  const parts = [
    ...(channels.servers ? [`servers ${channels.servers.join(", ")}`] : []),
    ...(channels.surfaces ? [`surfaces ${channels.surfaces.join(", ")}`] : []),
  ];
  return parts.length ? parts.join("; ") : "every channel";
}
