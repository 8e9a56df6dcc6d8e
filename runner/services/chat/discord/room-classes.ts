import type { REST } from "@discordjs/rest";
import { Routes } from "discord-api-types/v10";
import type { RosterPaths } from "../../../ground/config/paths.ts";
import { errorMessage } from "../../../ground/errors.ts";
import { recordClass } from "../../../records/channels/surface-class.ts";
import { discordRoomClass, isThread, type WireChannel, type WireRole } from "./visibility.ts";

/**
 * The listener's reading of each guild channel's class (visibility.ts),
 * recorded for the channel classes and connection edges that name `public`
 * or `private` (records/channels/surface-class.ts). Read from Discord before
 * a channel's message is handed on, at most once a minute per channel, so a
 * channel made private is judged private within a minute of its next
 * message. A reading that fails forgets the class: unknown admits nothing.
 */
const FRESH_MS = 60_000;

export class DiscordRoomClasses {
  private readonly readAt = new Map<string, number>();

  constructor(
    private readonly rest: REST,
    private readonly paths: RosterPaths,
    private readonly note: (text: string) => void,
  ) {}

  async classify(channel: string, guild: string, platformChannel: string): Promise<void> {
    const last = this.readAt.get(channel);
    if (last !== undefined && Date.now() - last < FRESH_MS) return;
    this.readAt.set(channel, Date.now());
    let roomClass: Awaited<ReturnType<typeof discordRoomClass>>;
    try {
      let read = (await this.rest.get(Routes.channel(platformChannel))) as WireChannel;
      if (isThread(read) && read.parent_id)
        read = (await this.rest.get(Routes.channel(read.parent_id))) as WireChannel;
      const roles = (await this.rest.get(Routes.guildRoles(guild))) as WireRole[];
      roomClass = discordRoomClass(guild, read, roles);
    } catch (error) {
      this.readAt.delete(channel);
      this.note(
        `${channel}: its class (public or private) could not be read: ${errorMessage(error)}`,
      );
      roomClass = undefined;
    }
    await recordClass(this.paths, channel, roomClass).catch((error: unknown) =>
      this.note(`${channel}: its class was not recorded: ${errorMessage(error)}`),
    );
  }
}
