import type { ChatSection } from "../../ground/config/config-schema.ts";
import type { Authority } from "../slash-catalogue/catalogue.ts";

/**
 * Who may run what. A person's standing comes from org.toml `[chat]`
 * (`admins`, `approvers`), and from what their platform says of them only
 * where `[chat.from_platform]` turns that on, and only for a guild or
 * workspace it names: anyone can invite a bot to a server of their own, where
 * they hold every role and Manage Server. The terminal is the operator's
 * own shell on the host and may do everything. Every answer names the rule
 * it went by, so a refusal tells the person what would let them.
 */
export interface Asker {
  /** `discord:<id>`, `slack:<id>`, or `term:<login>` for `roster talk`. */
  user: string;
  /** What the platform said of them with this very command (the listener read it there). */
  platform?: {
    /** The guild or workspace (team id) these facts are about: they count only where the config names it. */
    server?: string;
    /** Discord role ids they hold in the guild the command came from. */
    roles?: string[];
    /** Discord's Manage Server permission in that guild. */
    manageServer?: boolean;
    /** A Slack workspace admin or owner. */
    workspaceAdmin?: boolean;
  };
}

export type Standing = "admin" | "approver" | "none";

export interface Judged {
  standing: Standing;
  /** The rule that gave the standing, or that none did. */
  rule: string;
}

export function standingOf(asker: Asker, chat: ChatSection | undefined): Judged {
  if (asker.user.startsWith("term:"))
    return { standing: "admin", rule: "the terminal on the host is the operator's" };
  if (chat?.admins?.includes(asker.user))
    return { standing: "admin", rule: "org.toml [chat] admins" };
  const vouched = platformRule(asker, chat?.from_platform);
  if (vouched) return { standing: "admin", rule: vouched };
  if (chat?.approvers?.includes(asker.user))
    return { standing: "approver", rule: "org.toml [chat] approvers" };
  return {
    standing: "none",
    rule: `${asker.user} is in neither org.toml [chat] admins nor [chat] approvers${
      !chat?.from_platform
        ? ""
        : asker.platform?.server && !named(asker, chat.from_platform)
          ? `, and [chat.from_platform] does not name ${asker.platform.server} (its word counts only in the guilds and workspaces named there)`
          : ", and [chat.from_platform] vouches for nothing they have"
    }`,
  };
}

/** Whether the server the platform spoke for is one the config names as this deployment's. */
function named(asker: Asker, rules: NonNullable<ChatSection["from_platform"]>): boolean {
  const server = asker.platform?.server;
  if (!server) return false;
  if (asker.user.startsWith("discord:")) return rules.discord_guilds?.includes(server) === true;
  if (asker.user.startsWith("slack:"))
    return rules.slack_workspaces?.includes(server.toUpperCase()) === true;
  return false;
}

function platformRule(
  asker: Asker,
  rules: ChatSection["from_platform"] | undefined,
): string | undefined {
  const facts = asker.platform;
  if (!rules || !facts || !named(asker, rules)) return undefined;
  if (asker.user.startsWith("discord:")) {
    if (rules.discord_manage_server && facts.manageServer)
      return "org.toml [chat.from_platform] discord_manage_server (you have Manage Server)";
    const role = rules.discord_roles?.find((id) => facts.roles?.includes(id));
    if (role) return `org.toml [chat.from_platform] discord_roles (you hold role ${role})`;
  }
  if (asker.user.startsWith("slack:") && rules.slack_workspace_admins && facts.workspaceAdmin)
    return "org.toml [chat.from_platform] slack_workspace_admins (you are a workspace admin)";
  return undefined;
}

/** Whether a standing may do what a command part needs. */
export function allows(standing: Standing, needs: Authority): boolean {
  if (needs === "anyone") return true;
  if (needs === "change") return standing === "admin";
  return standing !== "none";
}

/** What a refusal says: which standing the part needs, and the rule the person fell under. */
export function refusal(needs: Authority, judged: Judged): string {
  const who = needs === "change" ? "an admin" : "an approver or an admin";
  return `this needs ${who}: ${judged.standing === "none" ? judged.rule : `you are an ${judged.standing} by ${judged.rule}`}`;
}
