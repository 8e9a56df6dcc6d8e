import type { ExecutionContext, Executor } from "../executor.ts";
import type { AdapterFactory } from "../listeners/child.ts";

/**
 * A chat platform as the rest of the host sees it: where people talk to a
 * worker (the terminal, Discord, Slack …). Each lives in a folder of its own
 * under services/chat/ — its channel ids, its listener adapter, its sender,
 * its offers — and is known to everything else only through this shape and
 * the one list in platforms.ts. A new platform is one folder and one line
 * there (and, when it binds a bot, its key in worker.toml's `[channels]`).
 */
export interface ChatPlatform {
  /**
   * Its one name: the `[[action]] executor` that posts into its channels, the
   * `provider` of what it delivers, and (for a platform with a bot) its key in
   * worker.toml's `[channels]` and the vault credential its bot defaults to.
   */
  readonly name: string;
  /** What every roster channel id of this platform starts with (records/channels/ids.ts). */
  readonly channelPrefix: string;
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
