/**
 * TEST DOUBLE for a model provider's automatic prompt cache, which can't be
 * reached from here: the rule OpenAI documents for its prompt caching, played
 * over the requests the scripted model receives. A prompt of at least 1,024
 * tokens has the longest prefix it shares with an earlier request read from
 * the cache, counted in steps of 128 tokens; the rest is new. What is compared
 * is the request as the provider reads it, in order: the tools, then the
 * messages. Tokens are estimated at 4 characters each (no tokenizer here), so
 * the figures are a prompt's stable share, not a bill.
 */
import type { ChatRequestBody } from "./model-server.ts";

const MIN_TOKENS = 1024;
const STEP_TOKENS = 128;
const CHARS_PER_TOKEN = 4;

export interface CacheUsage {
  promptTokens: number;
  cachedTokens: number;
}

export class PrefixCache {
  private readonly seen: string[] = [];

  /** The usage a provider would report for this request, remembering it for the next. */
  read(body: ChatRequestBody): CacheUsage {
    const text = JSON.stringify([body.tools ?? [], body.messages ?? []]);
    const promptTokens = Math.ceil(text.length / CHARS_PER_TOKEN);
    let shared = 0;
    for (const earlier of this.seen) shared = Math.max(shared, commonPrefix(earlier, text));
    this.seen.push(text);
    const sharedTokens = Math.floor(shared / CHARS_PER_TOKEN);
    const cachedTokens =
      promptTokens >= MIN_TOKENS && sharedTokens >= MIN_TOKENS
        ? Math.floor(sharedTokens / STEP_TOKENS) * STEP_TOKENS
        : 0;
    return { promptTokens, cachedTokens: Math.min(cachedTokens, promptTokens) };
  }
}

function commonPrefix(a: string, b: string): number {
  const limit = Math.min(a.length, b.length);
  let i = 0;
  while (i < limit && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}
