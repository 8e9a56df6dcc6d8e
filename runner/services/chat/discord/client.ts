import { createHash } from "node:crypto";
import {
  DiscordAPIError,
  HTTPError,
  RateLimitError,
  REST,
  type RESTOptions,
} from "@discordjs/rest";
import {
  AllowedMentionsTypes,
  type RESTPostAPIChannelMessageJSONBody,
  type RESTPostAPIChannelMessageResult,
  type RESTPostAPICurrentUserCreateDMChannelJSONBody,
  type RESTPostAPICurrentUserCreateDMChannelResult,
  Routes,
} from "discord-api-types/v10";
import { type Credential, readCredential } from "../../../boundary/gateway/credentials/vault.ts";
import { hostCa, trustingFetch } from "../../../boundary/gateway/trust/host-trust.ts";
import type { SentParts } from "../sent-parts.ts";

/**
 * Discord's REST client for the sender (discord.js's @discordjs/rest, API v10),
 * loaded only when something is posted. The vault credential "discord" holds
 * the bot `token` (and, for tests, `api_base`, the client's `api` option). Each
 * message carries a nonce derived from the gate id with enforce_nonce, so a
 * retried approval within Discord's dedupe window returns the message already
 * posted instead of posting it again. Mentions of users ping; @everyone, @here
 * and roles never do.
 */
const REQUEST_TIMEOUT_MS = 15_000;
/** A rate limit longer than this fails the send (legibly) rather than holding the desk or a box tool. */
const MAX_RATE_LIMIT_WAIT_MS = 30_000;

export interface DiscordBot {
  rest: REST;
  credential: Credential;
}

/** The client for a Discord bot's vault credential ("discord" unless a worker binds another), or a legible reason there is none. */
export function discordBot(vault: string, name = "discord"): DiscordBot {
  const credential = readCredential(vault, name);
  const token = credential?.token;
  if (!credential || typeof token !== "string" || !token)
    throw new Error(
      'no Discord credential: store the bot token as field "token" of the vault credential "discord" (roster login discord --field token=…)',
    );
  const ca = hostCa();
  const rest = new REST({
    makeRequest: trustingFetch(ca) as unknown as RESTOptions["makeRequest"],
    ...(typeof credential.api_base === "string" ? { api: credential.api_base } : {}),
    version: "10",
    timeout: REQUEST_TIMEOUT_MS,
    retries: 2,
    // the client waits out a 429 (Retry-After, X-RateLimit-*) and retries; a long one is refused
    rejectOnRateLimit: (limit) => limit.retryAfter > MAX_RATE_LIMIT_WAIT_MS,
    // one client per send: no sweeper timers left behind
    hashSweepInterval: 0,
    handlerSweepInterval: 0,
  }).setToken(token);
  return { rest, credential };
}

/** A Discord failure in words an operator can act on. */
export function discordProblem(what: string, error: unknown): string {
  if (error instanceof DiscordAPIError) {
    const hint =
      error.status === 401
        ? 'the token of the vault credential "discord" was refused (roster login discord --field token=…)'
        : error.code === 10003
          ? "no such channel: check the id"
          : error.code === 50001 || error.code === 50013
            ? "the bot may not post there: give it access to the channel"
            : error.code === 50007
              ? "that user does not accept DMs from the bot"
              : error.code === 10013
                ? 'owner_id of the vault credential "discord" names no user'
                : undefined;
    return `Discord refused ${what}: ${error.status} ${error.message} (code ${error.code})${hint ? `: ${hint}` : ""}`;
  }
  if (error instanceof RateLimitError)
    return `Discord rate-limited ${what} for ${Math.ceil(error.retryAfter / 1000)} s (more than this executor waits); approve again later`;
  if (error instanceof HTTPError)
    return `Discord ${what} failed: HTTP ${error.status} ${error.message}`;
  return `Discord ${what} failed: ${error instanceof Error ? error.message : String(error)}`;
}

/** Discord dedupes on (author, nonce) for a few minutes; a nonce is at most 25 characters. */
export function discordNonce(key: string, index: number): string {
  const base = /^[A-Za-z0-9-]{1,20}$/.test(key)
    ? key
    : createHash("sha256").update(key).digest("hex").slice(0, 20);
  return `${base}.${index + 1}`;
}

/**
 * Posts the parts in order; returns each message id. On a failure part-way,
 * the error says how many went out. The nonce covers a retry within Discord's
 * few minutes; `ledger` (each part recorded as it is accepted) covers a retry
 * approved later, which would otherwise post the delivered parts again.
 */
export async function postDiscordParts(
  rest: REST,
  channelId: string,
  parts: string[],
  key: string,
  ledger?: SentParts,
): Promise<string[]> {
  const ids: string[] = [];
  for (const [index, content] of parts.entries()) {
    const already = ledger?.sent(index, channelId, content);
    if (already) {
      ids.push(already);
      continue;
    }
    const body: RESTPostAPIChannelMessageJSONBody = {
      content,
      allowed_mentions: { parse: [AllowedMentionsTypes.User] },
      nonce: discordNonce(key, index),
      enforce_nonce: true,
    };
    let id: string;
    try {
      const message = (await rest.post(Routes.channelMessages(channelId), {
        body,
      })) as RESTPostAPIChannelMessageResult;
      id = message.id;
    } catch (error) {
      const sent = index > 0 ? ` after ${index} of ${parts.length} messages were posted` : "";
      throw new Error(`${discordProblem(`a message to channel ${channelId}`, error)}${sent}`, {
        cause: error,
      });
    }
    ids.push(id);
    ledger?.record(index, channelId, content, id);
  }
  return ids;
}

/** The DM channel with a user (Discord answers the existing one if there is one). */
export async function openDiscordDm(rest: REST, userId: string): Promise<string> {
  const body: RESTPostAPICurrentUserCreateDMChannelJSONBody = { recipient_id: userId };
  try {
    const channel = (await rest.post(Routes.userChannels(), {
      body,
    })) as RESTPostAPICurrentUserCreateDMChannelResult;
    return channel.id;
  } catch (error) {
    throw new Error(discordProblem(`a DM channel with user ${userId}`, error), { cause: error });
  }
}
