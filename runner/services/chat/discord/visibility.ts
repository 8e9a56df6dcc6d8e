import type { RoomClass } from "../../../records/channels/surface-class.ts";

/**
 * Whether a Discord guild channel is public or private, from Discord's own
 * permissions as its API hands them over (strings of permission bits). The
 * role whose id is the guild's id is @everyone: a channel @everyone can't
 * view (VIEW_CHANNEL denied in the channel's overwrite for that role, or
 * missing from the role itself without the overwrite allowing it) is
 * private; everything else is public. ADMINISTRATOR on @everyone sees every
 * channel. A thread is its parent's class (Discord's own rule for who sees
 * it), so the caller passes the parent for one.
 */
const VIEW_CHANNEL = 1n << 10n;
const ADMINISTRATOR = 1n << 3n;
/** Announcement, public and private threads. */
const THREAD_TYPES = new Set([10, 11, 12]);

export interface WireOverwrite {
  id: string;
  /** 0 a role, 1 a member. */
  type: number | string;
  allow: string;
  deny: string;
}

export interface WireChannel {
  id: string;
  type: number;
  guild_id?: string;
  parent_id?: string | null;
  permission_overwrites?: WireOverwrite[];
}

export interface WireRole {
  id: string;
  permissions: string;
}

export const isThread = (channel: WireChannel): boolean => THREAD_TYPES.has(channel.type);

const bits = (value: string): bigint => {
  // a field that isn't a whole number of bits is read as granting nothing
  try {
    return /^[0-9]+$/.test(value) ? BigInt(value) : 0n;
  } catch {
    return 0n;
  }
};

/**
 * The class of `channel` (a thread's parent when it is one), in guild
 * `guild`, whose roles are `roles`. Undefined when @everyone is not among the
 * roles: the class can't be known, and an unknown class admits nothing.
 */
export function discordRoomClass(
  guild: string,
  channel: WireChannel,
  roles: readonly WireRole[],
): RoomClass | undefined {
  const everyone = roles.find((role) => role.id === guild);
  if (!everyone) return undefined;
  let allowed = bits(everyone.permissions);
  if (allowed & ADMINISTRATOR) return "public";
  const overwrite = channel.permission_overwrites?.find(
    (one) => one.id === guild && Number(one.type) === 0,
  );
  if (overwrite) {
    allowed &= ~bits(overwrite.deny);
    allowed |= bits(overwrite.allow);
  }
  return allowed & VIEW_CHANNEL ? "public" : "private";
}
