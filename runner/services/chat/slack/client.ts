import {
  LogLevel,
  WebAPIHTTPError,
  WebAPIPlatformError,
  WebAPIRequestError,
  WebClient,
} from "@slack/web-api";
import { type Credential, readCredential } from "../../../boundary/gateway/credentials/vault.ts";
import { hostCa, trustingFetch } from "../../../boundary/gateway/trust/host-trust.ts";
import type { SentParts } from "../sent-parts.ts";

/**
 * Slack's own client for the sender, @slack/web-api (chat.postMessage),
 * loaded only when something is posted. The vault credential "slack" holds
 * `bot_token` (and, for tests, `api_base`, the client's slackApiUrl). A
 * rate-limit reply (429 + Retry-After) is waited out and retried by the client.
 */
const REQUEST_TIMEOUT_MS = 20_000;
/** A few quick retries (each 429 first waits out its Retry-After), not the client's default 30 minutes. */
const RETRY = { retries: 3, factor: 2, minTimeout: 200, maxTimeout: 2000, randomize: false };

const AUTH_ERRORS = new Set([
  "invalid_auth",
  "not_authed",
  "token_revoked",
  "token_expired",
  "account_inactive",
]);

export interface SlackBot {
  client: WebClient;
  credential: Credential;
}

/** The client for a Slack bot's vault credential ("slack" unless a worker binds another), or a legible reason there is none. */
export function slackBot(vault: string, name = "slack"): SlackBot {
  const credential = readCredential(vault, name);
  const token = credential?.bot_token;
  if (!credential || typeof token !== "string" || !token)
    throw new Error(
      'no Slack credential: store the bot token as field "bot_token" of the vault credential "slack" (roster login slack --field bot_token=…)',
    );
  const ca = hostCa();
  const client = new WebClient(token, {
    fetch: trustingFetch(ca),
    ...(typeof credential.api_base === "string" ? { slackApiUrl: credential.api_base } : {}),
    allowAbsoluteUrls: false,
    logLevel: LogLevel.ERROR,
    retryConfig: RETRY,
    timeout: REQUEST_TIMEOUT_MS,
  });
  return { client, credential };
}

/** A Slack failure in words an operator can act on. */
export function slackProblem(method: string, target: string, error: unknown): string {
  if (error instanceof WebAPIPlatformError) {
    const code = error.data.error;
    const hint = AUTH_ERRORS.has(code)
      ? 'the bot_token of the vault credential "slack" was refused (roster login slack --field bot_token=…)'
      : code === "channel_not_found"
        ? "no such conversation visible to the bot: check the id, or add the app to the channel"
        : code === "not_in_channel"
          ? "the bot is not a member: invite the app to the channel"
          : code === "user_not_found"
            ? 'owner_id of the vault credential "slack" names no user'
            : undefined;
    return `Slack ${method} for ${target} refused: ${code}${hint ? `: ${hint}` : ""}`;
  }
  if (error instanceof WebAPIHTTPError)
    return `Slack ${method} for ${target} failed: HTTP ${error.statusCode} ${error.statusMessage}`;
  if (error instanceof WebAPIRequestError) {
    const cause = error.original.cause;
    const detail = cause instanceof Error ? `${error.original.message} (${cause.message})` : "";
    return `Slack ${method} for ${target}: could not reach Slack: ${detail || error.original.message}`;
  }
  return `Slack ${method} for ${target} failed: ${error instanceof Error ? error.message : String(error)}`;
}

/**
 * Posts the parts in order, to a thread when `threadTs` is given. Returns each
 * part's ts; on a failure part-way, the error says how many went out. With
 * `ledger`, each part is recorded as Slack accepts it and a part already
 * recorded is not posted again (a retry resumes after the last one).
 */
export async function postSlackParts(
  client: WebClient,
  channel: string,
  parts: string[],
  threadTs?: string,
  ledger?: SentParts,
): Promise<string[]> {
  const stamps: string[] = [];
  const target = threadTs ? `${channel}/${threadTs}` : channel;
  for (const [index, text] of parts.entries()) {
    const already = ledger?.sent(index, target, text);
    if (already) {
      stamps.push(already);
      continue;
    }
    let ts: string;
    try {
      const posted = await client.chat.postMessage({
        channel,
        text,
        ...(threadTs ? { thread_ts: threadTs } : {}),
      });
      if (typeof posted.ts !== "string")
        throw new Error("chat.postMessage answered ok without a message ts");
      ts = posted.ts;
    } catch (error) {
      const sent = index > 0 ? ` after ${index} of ${parts.length} messages were posted` : "";
      throw new Error(`${slackProblem("chat.postMessage", channel, error)}${sent}`, {
        cause: error,
      });
    }
    stamps.push(ts);
    ledger?.record(index, target, text, ts);
  }
  return stamps;
}
