import type { ChatSection } from "../../ground/config/config-schema.ts";
import type { ChatPlatform, PlatformFacts } from "../chat/platform.ts";
import { CHAT_PLATFORMS } from "../chat/platforms.ts";
import type { Authority } from "../slash-catalogue/catalogue.ts";

/**
 * Who may run what. A person's standing comes from org.toml `[chat]`
 * (`admins`, `approvers`), and from what their platform says of them only
 * where `[chat.from_platform]` turns that on, and only for a guild or
 * workspace it names: anyone can invite a bot to a server of their own, where
 * they hold every role and Manage Server. Each platform reads its own keys
 * (its `vouch`); a platform whose people are all the operator (the terminal
 * on the host) may do everything. Every answer names the rule it went by, so
 * a refusal tells the person what would let them.
 */
export interface Asker {
  /** `<platform>:<id>`: `discord:<id>`, or `term:<login>` for `roster talk`. */
  user: string;
  /** What the platform said of them with this very command (the listener read it there). */
  platform?: PlatformFacts;
}

export type Standing = "admin" | "approver" | "none";

export interface Judged {
  standing: Standing;
  /** The rule that gave the standing, or that none did. */
  rule: string;
}

/** The platform an asker speaks from, by the `<name>:` their id starts with. */
function platformOf(asker: Asker): ChatPlatform | undefined {
  return CHAT_PLATFORMS.find((platform) => asker.user.startsWith(`${platform.name}:`));
}

export function standingOf(asker: Asker, chat: ChatSection | undefined): Judged {
  const platform = platformOf(asker);
  if (platform?.operators) return { standing: "admin", rule: platform.operators };
  if (chat?.admins?.includes(asker.user))
    return { standing: "admin", rule: "org.toml [chat] admins" };
  const named = isNamed(asker, platform, chat);
  const vouched =
    named && asker.platform ? platform?.vouch?.admits(asker.platform, chat) : undefined;
  if (vouched) return { standing: "admin", rule: vouched };
  if (chat?.approvers?.includes(asker.user))
    return { standing: "approver", rule: "org.toml [chat] approvers" };
  return {
    standing: "none",
    rule: `${asker.user} is in neither org.toml [chat] admins nor [chat] approvers${
      !chat?.from_platform
        ? ""
        : asker.platform?.server && !named
          ? `, and [chat.from_platform] does not name ${asker.platform.server} (its word counts only in the guilds and workspaces named there)`
          : ", and [chat.from_platform] vouches for nothing they have"
    }`,
  };
}

/** Whether the server the platform spoke for is one the config names as this deployment's. */
function isNamed(
  asker: Asker,
  platform: ChatPlatform | undefined,
  chat: ChatSection | undefined,
): boolean {
  const server = asker.platform?.server;
  if (!server || !chat?.from_platform) return false;
  return platform?.vouch?.named(server, chat) === true;
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
