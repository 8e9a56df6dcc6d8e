/**
 * Who may read each conversation of the Slack stand-in (slack-stand-in.ts), a
 * TEST DOUBLE for Slack, which can't be reached from here, said as Slack says
 * it: the `channel_type` every message event carries ("channel" a public
 * channel, "group" a private one, "mpim" a group DM, "im" a DM) and the
 * conversation object conversations.info answers (`is_channel`, `is_group`,
 * `is_im`, `is_mpim`, `is_private`). The id doesn't say it: a private channel
 * made since 2021 has a C id like a public one (only older ones are G…), so a
 * test names a private channel's kind; left unnamed, a D… id is a DM, a G…
 * one a private channel of the old kind, and the rest public channels.
 */
export type ConversationKind = "public" | "private" | "mpim" | "im";

export class SlackConversations {
  private readonly kinds = new Map<string, ConversationKind>();

  kindOf(channel: string): ConversationKind {
    const named = this.kinds.get(channel);
    if (named) return named;
    if (channel.startsWith("D")) return "im";
    if (channel.startsWith("G")) return "private";
    return "public";
  }

  set(channel: string, kind: ConversationKind): void {
    this.kinds.set(channel, kind);
  }

  /** The channel_type Slack puts on a message event in this conversation. */
  channelType(channel: string): "channel" | "group" | "mpim" | "im" {
    const kind = this.kindOf(channel);
    return kind === "public" ? "channel" : kind === "private" ? "group" : kind;
  }

  /** conversations.info's `channel`, the fields Slack always sends for its kind. */
  info(channel: string): Record<string, unknown> {
    const kind = this.kindOf(channel);
    const created = 1_700_000_000;
    if (kind === "im")
      return {
        id: channel,
        created,
        is_im: true,
        is_org_shared: false,
        user: `U${channel.slice(1)}`,
      };
    const oldGroup = kind === "private" && channel.startsWith("G");
    return {
      id: channel,
      name: channel.toLowerCase(),
      // a private channel of the old kind (G…) is a group, not a channel
      is_channel: kind !== "mpim" && !oldGroup,
      is_group: oldGroup,
      is_im: false,
      is_mpim: kind === "mpim",
      is_private: kind !== "public",
      created,
      is_archived: false,
      is_general: false,
      is_shared: false,
      is_ext_shared: false,
      is_org_shared: false,
      is_member: true,
      name_normalized: channel.toLowerCase(),
    };
  }

  reset(): void {
    this.kinds.clear();
  }
}
