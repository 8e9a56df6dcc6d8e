import type { TObject, TProperties } from "@sinclair/typebox";

/**
 * What the floors below services know of a chat platform: its terms, as the
 * platform itself declares them (services/chat/<platform>/platform.ts) and
 * the one list (services/chat/platforms.ts) hands them down when it is first
 * read. The config learns its keys and id rules here, a channel class its
 * servers, the router and the box their send tools, the connection recipes
 * their bots: none of them names a platform. Until the list is read this
 * knows none, and the config then refuses every platform's keys (fail closed).
 */
export interface PlatformTerms {
  /** Its one name: the executor, the `<name>-send` intent, the `<name>_send` tool, the `<name>:` of a person. */
  readonly name: string;
  /** What every roster channel id of this platform starts with. */
  readonly channelPrefix: string;
  /**
   * Every channel of it has one person in it besides the worker (the
   * terminal); otherwise a channel of it is direct when its id has `-dm-`
   * (records/channels/ids.ts).
   */
  readonly direct?: boolean;
  /**
   * A surface kind of its own, which its every channel is of: a word a
   * channel class's `surfaces` may name besides `dm`, `room` and `none` (the
   * terminal's `term`). Without one its channels are `dm` or `room`.
   */
  readonly surface?: string;
  /**
   * Which `[box]` idle window holds a warm session of it open: `talk`
   * (`talk_idle_secs`, a person at the host's terminal) or, unless it says
   * so, `chat` (`chat_idle_secs`).
   */
  readonly idle?: "talk" | "chat";
  /** Whether a bot speaks for it: a key in worker.toml's `[channels]`, naming the bot's vault credential. */
  readonly bot?: boolean;
  /**
   * Whether its people are named in org.toml `[chat]` (`approvers`, `admins`:
   * `<name>:<user id>`) and its channels may be `approvals_channel`.
   */
  readonly people?: boolean;
  /**
   * The server (guild, workspace) a channel is in, as a channel class names it
   * (`<name>-<server id>`, lower case); undefined for a channel in none (a DM).
   */
  readonly serverOf?: (channelId: string) => string | undefined;
  /** Its keys in org.toml `[chat.from_platform]`, each starting with `<name>_`. */
  readonly fromPlatform?: TProperties;
  /** The box's tool that proposes a message into its channels. */
  readonly send: SendTool;
  /** `roster connection add --from <name>`: its bot's credential, when it has one. */
  readonly connection?: BotConnection;
}

/** A send tool as the box registers it; the host hands the box the list (ROSTER_CHAT_SENDS). */
export interface SendTool {
  readonly label: string;
  readonly description: string;
  /** What it proposes: `channel_id`, `text`, and what else the platform's sender takes. */
  readonly payload: TObject;
  /** Whether it asks for a rationale, which a human approving it reads (the box adds the parameter). */
  readonly rationale: boolean;
}

/** A chat bot's connection recipe: the token the gateway injects, and its one harmless check. */
export interface BotConnection {
  readonly summary: string;
  readonly hosts: string[];
  readonly inject: { header: string; value: string };
  readonly secretField: string;
  readonly verify: {
    method: "GET" | "POST";
    path: string;
    okField?: string;
  };
  /** Vault fields its listener needs besides the secret: named when missing. */
  readonly listenerNeeds?: string[];
  /** What a connection edge may narrow this bot's connection to, when the platform can say. */
  readonly edgeScope?: EdgeScopeTerms;
}

/**
 * A connection edge's dimensions on a chat platform (the public roster's
 * provider scope: `[grant.<worker>] servers = […], surfaces = […]`), and where
 * each is held: the API paths a box may call (ground/config/edge-scope.ts)
 * and the channels the bot's listener hands on.
 */
export interface EdgeScopeTerms {
  /**
   * Where the API is (`root`) and the one version of it a narrowed edge may
   * call (`version`, under which the paths below are judged): any other
   * version would reach the same channels by paths no rule names.
   */
  readonly api: { readonly root: string; readonly version: string };
  /** The API path each server's endpoints sit under, as `<path>/<server id>`. */
  readonly serverPath: string;
  /** The API path each surface's (a channel's) endpoints sit under, as `<path>/<surface id>`. */
  readonly surfacePath: string;
  /** The class words `surfaces` may hold beside ids. */
  readonly classes: readonly string[];
  /** A roster channel id of this platform read as an edge judges it; undefined when it is not one. */
  readonly placeOf: (channelId: string) => EdgePlace | undefined;
  /**
   * A room's class (`public`, `private`) as its listener recorded it, by the
   * roster channel id or by the platform's own id for it (as a request's path
   * names it); undefined when none is recorded, which admits it to no class.
   */
  readonly classOf?: (channel: { roster: string } | { surface: string }) => string | undefined;
}

/** Where a message came from, in the platform's own ids: a direct one is in no server. */
export type EdgePlace = { server: string; surface: string } | { direct: true };

let declared: readonly PlatformTerms[] = [];

/** Called by the list of platforms (services/chat/platforms.ts), and by a test that adds one. */
export function declarePlatforms(platforms: readonly PlatformTerms[]): void {
  declared = platforms;
}

/** Every declared platform, in the list's order. */
export function chatPlatforms(): readonly PlatformTerms[] {
  return declared;
}

/** The platform a roster channel id belongs to, by its prefix. */
export function platformTermsOf(channelId: string): PlatformTerms | undefined {
  return declared.find((platform) => channelId.startsWith(platform.channelPrefix));
}

/** The surface kinds a channel class may name: `dm`, `room`, each platform's own, and `none`. */
export function surfaceKinds(): string[] {
  return [
    "dm",
    "room",
    ...declared.flatMap((platform) => (platform.surface ? [platform.surface] : [])),
    "none",
  ];
}

/** The box tool that sends into a platform's channels, and the intent it proposes. */
export const sendToolName = (platform: string): string => `${platform}_send`;
export const sendIntent = (platform: string): string => `${platform}-send`;

/** What the box reads from ROSTER_CHAT_SENDS (extensions/proposals.ts): one entry per platform. */
export function sendToolList(): string {
  return JSON.stringify(
    chatPlatforms().map((platform) => ({
      name: sendToolName(platform.name),
      intent: sendIntent(platform.name),
      label: platform.send.label,
      description: platform.send.description,
      payload: platform.send.payload,
      rationale: platform.send.rationale,
    })),
  );
}
