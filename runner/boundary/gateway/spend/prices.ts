import type { ModelPrice } from "../../../ground/config/grant-schema.ts";
import { globMatches } from "../judging/judge.ts";
import type { ModelUsage } from "./usage.ts";

/**
 * What a model call cost, from the tokens its provider reported and a price
 * table in US dollars per million tokens: org.toml's `[[budget.price]]`
 * entries first (the first whose `model` glob matches wins), then these
 * shipped defaults. The defaults were list prices when they were written and
 * may be out of date: set your own for the models you use. A model no entry
 * matches is metered in tokens only (its cost is unknown, never guessed).
 */
export const DEFAULT_PRICES: ModelPrice[] = [
  { model: "claude-opus-4*", input: 15, output: 75, cache_read: 1.5, cache_write: 18.75 },
  { model: "claude-sonnet-4*", input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 },
  { model: "claude-3-7-sonnet*", input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 },
  { model: "claude-3-5-haiku*", input: 0.8, output: 4, cache_read: 0.08, cache_write: 1 },
  { model: "claude-haiku-4*", input: 1, output: 5, cache_read: 0.1, cache_write: 1.25 },
  { model: "gpt-4.1-mini*", input: 0.4, output: 1.6, cache_read: 0.1 },
  { model: "gpt-4.1-nano*", input: 0.1, output: 0.4, cache_read: 0.025 },
  { model: "gpt-4.1*", input: 2, output: 8, cache_read: 0.5 },
  { model: "gpt-4o-mini*", input: 0.15, output: 0.6, cache_read: 0.075 },
  { model: "gpt-4o*", input: 2.5, output: 10, cache_read: 1.25 },
  { model: "o4-mini*", input: 1.1, output: 4.4, cache_read: 0.275 },
  { model: "o3*", input: 2, output: 8, cache_read: 0.5 },
];

/** The call's cost in USD, or undefined when no price names its model. */
export function costOf(usage: ModelUsage, table: ModelPrice[]): number | undefined {
  const model = usage.model;
  if (!model) return undefined;
  const price = [...table, ...DEFAULT_PRICES].find((entry) => globMatches(entry.model, model));
  if (!price) return undefined;
  const perToken = (perMillion: number | undefined, fallback: number) =>
    (perMillion ?? fallback) / 1_000_000;
  return (
    usage.input * perToken(price.input, 0) +
    usage.output * perToken(price.output, 0) +
    usage.cache_read * perToken(price.cache_read, price.input) +
    usage.cache_write * perToken(price.cache_write, price.input)
  );
}

/** All the tokens a call used, the `tokens` currency budgets count. */
export const tokensOf = (usage: ModelUsage) =>
  usage.input + usage.output + usage.cache_read + usage.cache_write;

/** A model call's spend from its reported usage: `tokens`, and `usd` when a price names the model. */
export function modelSpendOf(usage: ModelUsage, table: ModelPrice[]): Record<string, number> {
  const usd = costOf(usage, table);
  return { tokens: tokensOf(usage), ...(usd !== undefined ? { usd } : {}) };
}
