/**
 * TEST DOUBLE for the part of Discord's API that says who may see a guild
 * channel: GET /channels/:id answers a channel object with its
 * `permission_overwrites` ({id, type, allow, deny}, the permission bits as
 * strings, type 0 a role and 1 a member) and `parent_id` (a thread's
 * channel), and GET /guilds/:id/roles the guild's roles, @everyone's id
 * being the guild's. A channel is public (no overwrites) until a test hides
 * it from @everyone with `hide()`, as a guild admin would: an overwrite
 * denying VIEW_CHANNEL to @everyone and allowing it to a staff role.
 */
import type { ServerResponse } from "node:http";
import { reply } from "./discord-http.ts";

const VIEW_CHANNEL = String(1 << 10);
/** @everyone's permissions in a new guild: view channels, send messages, read history and the rest. */
const EVERYONE = "1071698660929";

interface Overwrite {
  id: string;
  type: 0 | 1;
  allow: string;
  deny: string;
}

export class DiscordPermissions {
  private readonly hidden = new Set<string>();
  /** A thread's parent channel. */
  private readonly parents = new Map<string, string>();

  constructor(private readonly guildOf: (channelId: string) => string | undefined) {}

  /** Makes a channel private: @everyone may not view it, a staff role may. */
  hide(channelId: string): void {
    this.hidden.add(channelId);
  }

  /** Makes `threadId` a public thread of `parentId`. */
  thread(threadId: string, parentId: string): void {
    this.parents.set(threadId, parentId);
  }

  /** GET /channels/:id and GET /guilds/:id/roles; false for any other request. */
  route(
    method: string,
    path: string,
    known: (id: string) => boolean,
    res: ServerResponse,
  ): boolean {
    if (method !== "GET") return false;
    const channel = /^\/api\/v10\/channels\/([0-9]+)$/.exec(path)?.[1];
    if (channel) {
      const guild = this.guildOf(channel) ?? this.guildOf(this.parents.get(channel) ?? "");
      if (!known(channel) || !guild) reply(res, 404, { message: "Unknown Channel", code: 10003 });
      else reply(res, 200, this.channel(channel, guild));
      return true;
    }
    const guild = /^\/api\/v10\/guilds\/([0-9]+)\/roles$/.exec(path)?.[1];
    if (guild) {
      reply(res, 200, [
        { ...role(guild, "@everyone", EVERYONE), position: 0 },
        { ...role(staffRole(guild), "staff", EVERYONE), position: 1 },
      ]);
      return true;
    }
    return false;
  }

  private channel(id: string, guild: string) {
    const parent = this.parents.get(id);
    if (parent)
      // a thread carries no overwrites of its own: its parent's decide who sees it
      return {
        id,
        type: 11,
        guild_id: guild,
        parent_id: parent,
        name: `thread-${id}`,
        owner_id: "830000000000000001",
        thread_metadata: { archived: false, auto_archive_duration: 1440, locked: false },
        flags: 0,
      };
    const overwrites: Overwrite[] = this.hidden.has(id)
      ? [
          { id: guild, type: 0, allow: "0", deny: VIEW_CHANNEL },
          { id: staffRole(guild), type: 0, allow: VIEW_CHANNEL, deny: "0" },
        ]
      : [];
    return {
      id,
      type: 0,
      guild_id: guild,
      name: `channel-${id}`,
      position: 0,
      parent_id: null,
      nsfw: false,
      topic: null,
      last_message_id: null,
      rate_limit_per_user: 0,
      flags: 0,
      permission_overwrites: overwrites,
    };
  }
}

const staffRole = (guild: string) => `${guild.slice(0, -1)}9`;

const role = (id: string, name: string, permissions: string) => ({
  id,
  name,
  color: 0,
  hoist: false,
  icon: null,
  unicode_emoji: null,
  managed: false,
  mentionable: false,
  permissions,
  flags: 0,
});
