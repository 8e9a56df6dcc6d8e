/**
 * The workspace's people for the Slack stand-in (slack-stand-in.ts): a TEST
 * DOUBLE for Slack, which can't be reached from here, answering `users.info`
 * with the user object Slack's Web API returns (id, team_id, name,
 * real_name, the is_admin / is_owner / is_primary_owner / is_restricted /
 * is_ultra_restricted / is_bot / deleted flags, tz, profile) or
 * `user_not_found`.
 *
 * Choices where Slack isn't observable from here: a user exists once a test
 * sets it (`setUser`), names it among the stand-in's `users`, or has it post,
 * press a button or run a slash command; one never set has every flag false
 * and its id lower-cased as name. Flags follow Slack's hierarchy: a primary
 * owner is an owner, and an owner an admin, whatever the test leaves out.
 * Everyone is in Etc/UTC; profile fields Slack fills from a person's own
 * settings (title, phone, status) are empty; no email is given (that takes
 * the users:read.email scope). The app's bot user is there too, as is_bot.
 * A Slack Connect guest (`team_id` set) is shown with their own team's id
 * and their standing there, as Slack shows someone from another workspace.
 */
import { IDENTITY } from "./slack-objects.ts";

/** What a test may say about a user; the rest is made up consistently. */
export interface SlackUserInput {
  name?: string;
  real_name?: string;
  is_admin?: boolean;
  is_owner?: boolean;
  is_primary_owner?: boolean;
  is_restricted?: boolean;
  is_ultra_restricted?: boolean;
  deleted?: boolean;
  /** Their own workspace, when it isn't this one: a Slack Connect guest from another team. */
  team_id?: string;
}

export interface SlackUserProfile {
  title: string;
  phone: string;
  skype: string;
  real_name: string;
  real_name_normalized: string;
  display_name: string;
  display_name_normalized: string;
  fields: null;
  status_text: string;
  status_emoji: string;
  status_expiration: number;
  avatar_hash: string;
  first_name: string;
  last_name: string;
  image_24: string;
  image_48: string;
  image_72: string;
  team: string;
  bot_id?: string;
  api_app_id?: string;
  always_active?: boolean;
}

/** A user object as users.info returns it. */
export interface SlackUser {
  id: string;
  team_id: string;
  name: string;
  deleted: boolean;
  color: string;
  real_name: string;
  tz: string;
  tz_label: string;
  tz_offset: number;
  profile: SlackUserProfile;
  is_admin: boolean;
  is_owner: boolean;
  is_primary_owner: boolean;
  is_restricted: boolean;
  is_ultra_restricted: boolean;
  is_bot: boolean;
  is_app_user: boolean;
  updated: number;
  is_email_confirmed?: boolean;
  who_can_share_contact_card?: string;
}

export class SlackUsers {
  private readonly set = new Map<string, SlackUserInput>();
  private readonly seen = new Set<string>();

  /** `named`: the ids the stand-in was started with (conversations.open's users). */
  constructor(private readonly named: string[]) {}

  /** A test sets (or changes) a user; what it leaves out stays as before, or false. */
  setUser(id: string, input: SlackUserInput): void {
    this.set.set(id, { ...this.set.get(id), ...input });
    // A set user is one the app can open a DM with, like those named at start.
    if (!this.named.includes(id)) this.named.push(id);
  }

  /** A user did something in the workspace, so it exists. */
  saw(id: string): void {
    this.seen.add(id);
  }

  /** The name Slack shows for the user: set, or the id lower-cased. */
  name(id: string): string {
    return this.set.get(id)?.name ?? id.toLowerCase();
  }

  /** users.info's user object, or undefined for a user the workspace doesn't have. */
  info(id: string): SlackUser | undefined {
    if (id === IDENTITY.botUserId) return botUser();
    const input = this.set.get(id);
    if (!input && !this.seen.has(id) && !this.named.includes(id)) return undefined;
    const name = this.name(id);
    const realName = input?.real_name ?? name;
    const primary = input?.is_primary_owner ?? false;
    const owner = primary || (input?.is_owner ?? false);
    return {
      ...base(id, name, realName, input?.deleted ?? false, input?.team_id),
      is_admin: owner || (input?.is_admin ?? false),
      is_owner: owner,
      is_primary_owner: primary,
      is_restricted: input?.is_restricted ?? false,
      is_ultra_restricted: input?.is_ultra_restricted ?? false,
      is_bot: false,
      is_app_user: false,
      updated: 1_700_000_000,
      is_email_confirmed: true,
      who_can_share_contact_card: "EVERYONE",
    };
  }

  reset(): void {
    this.set.clear();
    this.seen.clear();
  }
}

function base(
  id: string,
  name: string,
  realName: string,
  deleted: boolean,
  team: string = IDENTITY.teamId,
) {
  const [first = "", ...rest] = realName.split(" ");
  const avatar = `https://secure.gravatar.com/avatar/${id.toLowerCase()}.jpg`;
  return {
    id,
    team_id: team,
    name,
    deleted,
    color: "9f69e7",
    real_name: realName,
    tz: "Etc/UTC",
    tz_label: "Coordinated Universal Time",
    tz_offset: 0,
    profile: {
      title: "",
      phone: "",
      skype: "",
      real_name: realName,
      real_name_normalized: realName,
      display_name: name,
      display_name_normalized: name,
      fields: null,
      status_text: "",
      status_emoji: "",
      status_expiration: 0,
      avatar_hash: `g${id.slice(-11).toLowerCase()}`,
      first_name: first,
      last_name: rest.join(" "),
      image_24: `${avatar}?s=24`,
      image_48: `${avatar}?s=48`,
      image_72: `${avatar}?s=72`,
      team,
    },
  };
}

/** The app's own bot user, as users.info shows it. */
function botUser(): SlackUser {
  const user = base(IDENTITY.botUserId, IDENTITY.botName, IDENTITY.botName, false);
  return {
    ...user,
    profile: {
      ...user.profile,
      bot_id: IDENTITY.botId,
      api_app_id: IDENTITY.appId,
      always_active: false,
    },
    is_admin: false,
    is_owner: false,
    is_primary_owner: false,
    is_restricted: false,
    is_ultra_restricted: false,
    is_bot: true,
    is_app_user: false,
    updated: 1_700_000_000,
  };
}
