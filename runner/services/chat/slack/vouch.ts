import { type Static, Type } from "@sinclair/typebox";
import type { ChatSection } from "../../../ground/config/config-schema.ts";
import type { Vouch } from "../platform.ts";

/**
 * Slack's keys in org.toml `[chat.from_platform]`, and what they make of a
 * person: a workspace admin's standing counts only in the workspaces
 * `slack_workspaces` names.
 */
export const SLACK_RULES = {
  /**
   * The Slack workspaces (team ids, e.g. "T0123ABCD") whose word counts:
   * `slack_workspace_admins` only there. Commands come only from the
   * bot's own workspace, whatever is named.
   */
  slack_workspaces: Type.Optional(
    Type.Array(
      Type.String({
        pattern: "^[A-Z0-9]{1,40}$",
        description: 'a team id like "T0123ABCD"',
      }),
    ),
  ),
  /** Admins and owners of a workspace `slack_workspaces` names. */
  slack_workspace_admins: Type.Optional(Type.Boolean()),
};
type SlackRules = Static<ReturnType<typeof Type.Object<typeof SLACK_RULES>>>;

/** Slack's keys of a loaded `[chat]` (checked against SLACK_RULES at load). */
export function slackRules(chat: ChatSection | undefined): SlackRules {
  return (chat?.from_platform ?? {}) as SlackRules;
}

export const slackVouch: Vouch = {
  named: (server, chat) =>
    slackRules(chat).slack_workspaces?.includes(server.toUpperCase()) === true,
  admits: (facts, chat) =>
    slackRules(chat).slack_workspace_admins && facts.workspaceAdmin
      ? "org.toml [chat.from_platform] slack_workspace_admins (you are a workspace admin)"
      : undefined,
};
