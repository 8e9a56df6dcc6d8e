/**
 * Channel history for the Slack stand-in (slack-stand-in.ts): Slack's
 * message timestamps, and conversations.history / conversations.replies with
 * Slack's paging — newest first, `oldest`/`latest` exclusive unless
 * `inclusive`, `limit`, and an opaque cursor (`next_ts:<ts digits>` in
 * base64, as Slack's looks) with `has_more`. Like Slack, history lists only
 * top-level messages: thread replies are reachable through replies alone.
 */
import type { StoredMessage } from "./slack-objects.ts";

/** Slack's ts is "<seconds>.<6 digits>"; compared as an integer count of microseconds. */
export function tsKey(ts: string): bigint | undefined {
  const match = /^(\d{1,12})(?:\.(\d{1,6}))?$/.exec(ts);
  if (!match) return undefined;
  return BigInt(match[1] ?? "0") * 1_000_000n + BigInt((match[2] ?? "").padEnd(6, "0"));
}

function formatTs(key: bigint): string {
  return `${key / 1_000_000n}.${String(key % 1_000_000n).padStart(6, "0")}`;
}

/** Hands out ts values from the wall clock, strictly increasing, as Slack's are per channel. */
export class TsClock {
  private last = 0n;

  next(): string {
    const now = BigInt(Date.now()) * 1000n;
    this.last = now > this.last ? now : this.last + 1n;
    return formatTs(this.last);
  }
}

export interface PageQuery {
  oldest?: unknown;
  latest?: unknown;
  inclusive?: unknown;
  limit?: unknown;
  cursor?: unknown;
}

export type PageResult =
  | { ok: false; error: string }
  | {
      ok: true;
      messages: StoredMessage[];
      has_more: boolean;
      response_metadata?: { next_cursor: string };
    };

const MAX_LIMIT = 999;

export class ChannelHistory {
  /** Per channel, oldest first (ts order). */
  private readonly channels = new Map<string, StoredMessage[]>();

  add(channel: string, message: StoredMessage): void {
    const list = this.channels.get(channel) ?? [];
    list.push(message);
    this.channels.set(channel, list);
  }

  /** Every stored message of the channel, thread replies included, oldest first. */
  all(channel: string): readonly StoredMessage[] {
    return this.channels.get(channel) ?? [];
  }

  find(channel: string, ts: string): StoredMessage | undefined {
    return this.all(channel).find((message) => message.ts === ts);
  }

  /** Puts a message in the place of the one with its ts (an edit keeps a message's ts). */
  replace(channel: string, message: StoredMessage): void {
    const list = this.channels.get(channel) ?? [];
    const at = list.findIndex((stored) => stored.ts === message.ts);
    if (at >= 0) list[at] = message;
  }

  remove(channel: string, ts: string): void {
    const list = this.channels.get(channel) ?? [];
    this.channels.set(
      channel,
      list.filter((message) => message.ts !== ts),
    );
  }

  clear(): void {
    this.channels.clear();
  }

  /** conversations.history: top-level messages, newest first, with thread summaries on parents. */
  history(channel: string, query: PageQuery): PageResult {
    const all = this.all(channel);
    const topLevel = all
      .filter((message) => !message.thread_ts || message.thread_ts === message.ts)
      .map((message) => withThreadSummary(message, all));
    return page(topLevel.reverse(), query, 100, "newest");
  }

  /** conversations.replies: the parent, then its replies oldest first. */
  replies(channel: string, ts: string, query: PageQuery): PageResult {
    const all = this.all(channel);
    const parent = all.find((message) => message.ts === ts);
    if (!parent) return { ok: false, error: "thread_not_found" };
    const replies = all.filter((message) => message.thread_ts === ts && message.ts !== ts);
    const result = page(replies, query, 1000, "oldest");
    if (!result.ok) return result;
    return { ...result, messages: [withThreadSummary(parent, all), ...result.messages] };
  }
}

/** A thread parent, as history shows it: thread_ts is its own ts, plus the reply summary. */
function withThreadSummary(message: StoredMessage, all: readonly StoredMessage[]): StoredMessage {
  const replies = all.filter((other) => other.thread_ts === message.ts && other.ts !== message.ts);
  const last = replies[replies.length - 1];
  if (!last) return message;
  const users = [...new Set(replies.map((reply) => reply.user))];
  return {
    ...message,
    thread_ts: message.ts,
    reply_count: replies.length,
    reply_users_count: users.length,
    reply_users: users,
    latest_reply: last.ts,
  };
}

function str(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

function truthy(value: unknown): boolean {
  return value === true || value === "true" || value === "1" || value === 1;
}

/**
 * One page of `ordered` (already in answer order). The cursor names the ts
 * the next page starts at, so paging stays stable while messages arrive.
 */
function page(
  ordered: StoredMessage[],
  query: PageQuery,
  defaultLimit: number,
  from: "newest" | "oldest",
): PageResult {
  const inclusive = truthy(query.inclusive);
  const oldestRaw = str(query.oldest);
  const latestRaw = str(query.latest);
  const oldest = oldestRaw === undefined ? undefined : tsKey(oldestRaw);
  const latest = latestRaw === undefined ? undefined : tsKey(latestRaw);
  if (oldestRaw !== undefined && oldest === undefined)
    return { ok: false, error: "invalid_ts_oldest" };
  if (latestRaw !== undefined && latest === undefined)
    return { ok: false, error: "invalid_ts_latest" };

  const limitRaw =
    query.limit === undefined || query.limit === "" ? defaultLimit : Number(query.limit);
  if (!Number.isInteger(limitRaw)) return { ok: false, error: "invalid_limit" };
  // Slack answers a limit of 0 with its default and caps the rest at its maximum.
  const limit = limitRaw <= 0 ? defaultLimit : Math.min(limitRaw, MAX_LIMIT);

  let start: bigint | undefined;
  const cursor = str(query.cursor);
  if (cursor !== undefined) {
    const decoded = /^next_ts:(\d{7,18})$/.exec(Buffer.from(cursor, "base64").toString("utf8"));
    if (!decoded?.[1]) return { ok: false, error: "invalid_cursor" };
    start = BigInt(decoded[1]);
  }

  const inRange = ordered.filter((message) => {
    const key = tsKey(message.ts) ?? 0n;
    if (oldest !== undefined && (inclusive ? key < oldest : key <= oldest)) return false;
    if (latest !== undefined && (inclusive ? key > latest : key >= latest)) return false;
    if (start !== undefined && (from === "newest" ? key > start : key < start)) return false;
    return true;
  });
  const messages = inRange.slice(0, limit);
  const next = inRange[limit];
  if (!next) return { ok: true, messages, has_more: false };
  const nextCursor = Buffer.from(`next_ts:${next.ts.replace(".", "")}`).toString("base64");
  return { ok: true, messages, has_more: true, response_metadata: { next_cursor: nextCursor } };
}
