import { type Static, Type } from "@sinclair/typebox";
import type { ChatSection } from "../../../ground/config/config-schema.ts";
import type { Vouch } from "../platform.ts";

/**
 * Discord's keys in org.toml `[chat.from_platform]`, and what they make of a
 * person: Discord's word (a role, Manage Server) counts only in the guilds
 * `discord_guilds` names, this deployment's own.
 */
export const DISCORD_RULES = {
  /**
   * This deployment's own Discord guilds: commands are registered and
   * answered only in these (and in DMs with the bot), and the Discord
   * keys below count only here. None named: no guild gets commands.
   */
  discord_guilds: Type.Optional(
    Type.Array(Type.String({ pattern: "^[0-9]{1,25}$", description: "a guild id" })),
  ),
  /** Members holding one of these Discord role ids. */
  discord_roles: Type.Optional(Type.Array(Type.String({ pattern: "^[0-9]{1,25}$" }))),
  /** Members with Discord's Manage Server permission in a guild `discord_guilds` names. */
  discord_manage_server: Type.Optional(Type.Boolean()),
};
type DiscordRules = Static<ReturnType<typeof Type.Object<typeof DISCORD_RULES>>>;

/** Discord's keys of a loaded `[chat]` (checked against DISCORD_RULES at load). */
export function discordRules(chat: ChatSection | undefined): DiscordRules {
  return (chat?.from_platform ?? {}) as DiscordRules;
}

export const discordVouch: Vouch = {
  named: (server, chat) => discordRules(chat).discord_guilds?.includes(server) === true,
  admits: (facts, chat) => {
    const rules = discordRules(chat);
    if (rules.discord_manage_server && facts.manageServer)
      return "org.toml [chat.from_platform] discord_manage_server (you have Manage Server)";
    const role = rules.discord_roles?.find((id) => facts.roles?.includes(id));
    return role ? `org.toml [chat.from_platform] discord_roles (you hold role ${role})` : undefined;
  },
};
