import type { IncomingHttpHeaders } from "node:http";
import type { Refusal } from "../judging/refusals.ts";
import { type BudgetBook, type BudgetRefusal, type MeterReading, unmeteredNote } from "./budget.ts";
import type { Answer } from "./meter-cel.ts";
import { type ModelUsage, UsageMeter } from "./usage.ts";

/**
 * Budgets at the door, for fixed spends and model usage alike: the 402 a
 * used-up window gets (with Retry-After and a hint the model can read), and
 * a model call's usage turned into spend once its answer has ended.
 */
export const MODEL_CURRENCIES = ["tokens", "usd"];

export function budgetRefusal(rule: string, over: BudgetRefusal): Refusal {
  return {
    status: 402,
    verdict: "budget",
    rule,
    retryAfterSeconds: over.retryAfterSeconds,
    body: {
      error: "budget exceeded",
      detail: `${over.currency} over ${over.window} cap (${over.used.toFixed(4)}/${over.max.toFixed(4)})`,
      retry_after_secs: over.retryAfterSeconds,
      hint: "a budget window is used up — nothing is broken; retry after it resets",
    },
  };
}

export function meterFor(headers: IncomingHttpHeaders): UsageMeter | undefined {
  const encoding = headers["content-encoding"];
  return UsageMeter.for(headers["content-type"], Array.isArray(encoding) ? encoding[0] : encoding);
}

/** The usage a finished answer reported, recorded as the worker's spend; for its audit line. */
export async function settleUsage(
  meter: UsageMeter,
  budgets: BudgetBook,
  subject: string | undefined,
): Promise<(ModelUsage & { cost_usd?: number }) | undefined> {
  const usage = await meter.finish();
  if (!usage) return undefined;
  const spend = budgets.modelSpend(usage);
  if (subject) budgets.record(subject, spend);
  return { ...usage, ...(spend.usd !== undefined ? { cost_usd: spend.usd } : {}) };
}

/**
 * The answer meters' spend once a call's answer has ended (however it ended:
 * what reached the box is what `response.bytes` says), recorded as the
 * subject's; for its audit line. A spend that can't be recorded (disk full)
 * is said there, never thrown: the line is still written.
 */
export function settleAnswer(
  settle: ((answer: Answer) => MeterReading) | undefined,
  budgets: BudgetBook,
  subject: string | undefined,
  answer: Answer,
): { spend?: Record<string, number>; note?: string } {
  if (!settle) return {};
  const reading = settle(answer);
  let note = unmeteredNote(reading.failed);
  try {
    if (subject) budgets.record(subject, reading.spend);
  } catch (error) {
    note = `answer meters not recorded: ${error instanceof Error ? error.message : String(error)}`;
  }
  return {
    ...(Object.keys(reading.spend).length ? { spend: reading.spend } : {}),
    ...(note ? { note } : {}),
  };
}
