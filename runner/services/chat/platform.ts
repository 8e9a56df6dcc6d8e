import type { PlatformTerms } from "../../ground/chat/terms.ts";
import type { ChatSection } from "../../ground/config/config-schema.ts";
import type { ExecutionContext, Executor } from "../executor.ts";
import type { AdapterFactory } from "../listeners/child.ts";

/**
 * A chat platform as the rest of the host sees it: where people talk to a
 * worker (the terminal, Discord, Slack …). Each lives in a folder of its own
 * under services/chat/ — its channel ids, its listener adapter, its sender,
 * its offers — and is known to everything else only through this shape and
 * the one list in platforms.ts. A new platform is one folder and one line
 * there: its terms (ground/chat/terms.ts: its config keys, id rules, send
 * tool, bot connection) are part of this shape, and the list hands them to
 * the floors below, so nothing outside its folder names it.
 */
export interface ChatPlatform extends PlatformTerms {
  /**
   * Its one name: the `[[action]] executor` that posts into its channels, the
   * `provider` of what it delivers, and (for a platform with a bot) its key in
   * worker.toml's `[channels]` and the vault credential its bot defaults to.
   */
  readonly name: string;
  /** The action executor that posts into its channels; its payload names the channel. */
  readonly sender: Executor<unknown>;
  /**
   * Its listener adapter, loaded only by the listener child that runs it (the
   * platform's client library is heavy). The terminal has none: `roster talk`
   * is its listener.
   */
  readonly listener?: () => Promise<AdapterFactory>;
  /**
   * The one person a direct surface of this platform is with, named as a
   * command's asker is (`discord:<user id>`); undefined for a room. The
   * terminal has none: it is the operator's, linked only from the terminal.
   */
  readonly personOf?: (channelId: string) => string | undefined;
  /** How message-user reaches the operator here, when the platform's credential names one. */
  readonly operatorDm?: OperatorDm;
  /** Whom the platform's own word makes an admin, by its `[chat.from_platform]` keys. */
  readonly vouch?: Vouch;
  /** Everyone here is the operator (the terminal on the host): the rule that says so. */
  readonly operators?: string;
}

/** What a platform said of a person with one command (the listener read it there). */
export interface PlatformFacts {
  /** The guild or workspace (team id) these facts are about: they count only where the config names it. */
  server?: string;
  /** Role ids they hold in the guild the command came from. */
  roles?: string[];
  /** The Manage Server permission in that guild. */
  manageServer?: boolean;
  /** A workspace admin or owner. */
  workspaceAdmin?: boolean;
}

/** A platform's word on a person, counted only in the servers its `[chat.from_platform]` keys name. */
export interface Vouch {
  /** Whether the server the platform spoke for is one the config names as this deployment's. */
  named(server: string, chat: ChatSection | undefined): boolean;
  /** The rule by which the platform's word makes them an admin, or undefined. */
  admits(facts: PlatformFacts, chat: ChatSection | undefined): string | undefined;
}

/**
 * A note to the operator as a direct message, sent by the deployment's bot
 * (the vault credential named after the platform) to the user its `owner_id`
 * names.
 */
export interface OperatorDm {
  /** How the desk names where it lands, before "DM with user …": "Discord". */
  readonly label: string;
  /** The parts a DM of `text` is posted as; the desk shows exactly these. */
  parts(text: string): string[];
  /** Posts the parts; answers what message-user reports (`delivered`, the channel, the first id). */
  send(owner: string, parts: string[], context: ExecutionContext): Promise<Record<string, unknown>>;
}
