import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { CelCall, CompiledMeter } from "../../../ground/config/budget-cel.ts";
import type {
  BudgetTableMatch,
  ModelPrice,
  ScopedLimit,
  Window,
} from "../../../ground/config/grant-schema.ts";
import { hostMatches } from "../../../ground/config/host-pattern.ts";
import { appendJsonLines } from "../../../ground/files/append-line.ts";
import { mcpMatches, scopeApplies } from "../judging/judge.ts";
import { LEDGER_HORIZON_MS, readUsage, type UsageLine } from "./ledger.ts";
import { type Answer, celAmount, celBool, celCall, type MeteredCall } from "./meter-cel.ts";
import { modelSpendOf } from "./prices.ts";
import type { ModelUsage } from "./usage.ts";
import { WindowTotals } from "./window-totals.ts";

/**
 * Budgets: meters put a spend on matching calls (a table by rule, host,
 * method, or an MCP tool call's method and tool name; or CEL over the call,
 * ground/config/budget-cel.ts), and a model call spends
 * the `tokens` (and `usd`) its provider reports (usage.ts, prices.ts); limits
 * cap the spend per window (epoch-aligned; a month is 30 days) at org or
 * worker scope. The call
 * that crosses a limit completes; the next is refused with 402. Every spend is
 * appended to audit/usage.jsonl and counters are rebuilt from it at start
 * (ledger.ts, across its rotated files), so a restart never resets a budget.
 */
const WINDOW_MS: Record<Window, number> = {
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
  month: 30 * 86_400_000,
};

export interface LimitStanding {
  scope: string;
  currency: string;
  window: Window;
  max: number;
  used: number;
  remaining: number;
  resets_at: string;
}

export interface BudgetRefusal {
  currency: string;
  window: Window;
  used: number;
  max: number;
  retryAfterSeconds: number;
}

const list = <T>(value: T | T[] | undefined): T[] | undefined =>
  value === undefined ? undefined : Array.isArray(value) ? value : [value];

export type { MeteredCall } from "./meter-cel.ts";

/**
 * What a call's meters came to: the spend per currency, and the meters that
 * could not be computed (a CEL expression that threw or returned the wrong
 * thing). Such a meter spends nothing, as in the public roster; its
 * currencies are still checked against their limits (a used-up window still
 * refuses the call) and the call's audit line says which meter failed and why.
 */
export interface MeterReading {
  spend: Record<string, number>;
  failed: { meter: string; currencies: string[]; why: string }[];
  /** Currencies of answer meters, read before the answer: checked now, spent when it has ended. */
  later: string[];
}

/**
 * The spend a call costs, per currency, from every matching meter: before the
 * answer, the meters that don't read it; given the answer, those that do.
 */
export function spendFor(
  meters: CompiledMeter[],
  call: MeteredCall,
  answer?: Answer,
): MeterReading {
  const reading: MeterReading = { spend: {}, failed: [], later: [] };
  // the call in CEL's spelling, built once and only when a meter reads it
  let cel: CelCall | undefined;
  const celOf = () => {
    cel ??= celCall(call, answer);
    return cel;
  };
  const after = answer !== undefined;
  for (const meter of meters) {
    if (after && !meter.answer) continue;
    const fail = (currencies: string[], why: string) =>
      reading.failed.push({ meter: meter.label, currencies, why });
    if (meter.match && !tableMatches(meter.match, call)) continue;
    // an answer meter's match is read before the answer too, unless it reads the answer
    if (meter.when && (after || !meter.when.answer)) {
      const matched = celBool(meter.when, celOf());
      if (!matched.ok) {
        fail(
          meter.spend.map((entry) => entry.currency),
          matched.why,
        );
        continue;
      }
      if (!matched.value) continue;
    }
    if (meter.answer && !after) {
      reading.later.push(...meter.spend.map((entry) => entry.currency));
      continue;
    }
    for (const { currency, amount } of meter.spend) {
      const spent =
        typeof amount === "number"
          ? { ok: true as const, value: amount }
          : celAmount(amount, celOf());
      if (spent.ok) add(reading.spend, currency, spent.value);
      else fail([currency], spent.why);
    }
  }
  return reading;
}

/** The audit line's words for meters that could not be computed, if any. */
export function unmeteredNote(failed: MeterReading["failed"]): string | undefined {
  if (failed.length === 0) return undefined;
  return `meter failed, spent nothing: ${failed.map((f) => `${f.meter}: ${f.why}`).join("; ")}`;
}

const add = (spend: Record<string, number>, currency: string, amount: number) => {
  spend[currency] = (spend[currency] ?? 0) + amount;
};

/** The table form: every field it names must match (its CEL twin is their `&&`). */
function tableMatches(match: BudgetTableMatch, call: MeteredCall): boolean {
  const rules = list(match.rule);
  if (rules && (call.rule === undefined || !rules.includes(call.rule))) return false;
  const hosts = list(match.host);
  if (hosts && !hosts.some((pattern) => hostMatches(pattern, call.host))) return false;
  const methods = list(match.method);
  if (methods && !methods.some((m) => m === "*" || m.toUpperCase() === call.method.toUpperCase())) {
    return false;
  }
  return !match.mcp || mcpMatches(match.mcp, call.mcp ?? null);
}

/**
 * What the door asks of the budgets: this process's own counters (Budgets),
 * or a shard's view of the one set its parent keeps (shared-budgets.ts),
 * where a check or a charge is a question to that parent. A charge checks and
 * spends in one step wherever the counters are, so two doors sharing a limit
 * can never both spend its last unit.
 */
export interface BudgetBook {
  check(
    subject: string,
    currencies: string[],
  ): BudgetRefusal | undefined | Promise<BudgetRefusal | undefined>;
  charge(
    subject: string,
    spend: Record<string, number>,
    now: number,
    alsoChecked: string[],
  ): BudgetRefusal | undefined | Promise<BudgetRefusal | undefined>;
  /** A spend that happened (a model's usage, an answer meter's): counted whatever the limits say. */
  record(subject: string, spend: Record<string, number>): void;
  modelSpend(usage: ModelUsage): Record<string, number>;
}

export class Budgets implements BudgetBook {
  private usage: UsageLine[] = [];
  private readonly file: string;
  private readonly totals = new WindowTotals(() => this.usage);

  constructor(
    auditDir: string,
    private meters: CompiledMeter[],
    private limits: ScopedLimit[],
    private prices: ModelPrice[] = [],
  ) {
    mkdirSync(auditDir, { recursive: true, mode: 0o700 });
    this.file = join(auditDir, "usage.jsonl");
    this.usage = readUsage(this.file, Date.now() - LEDGER_HORIZON_MS);
  }

  reconfigure(meters: CompiledMeter[], limits: ScopedLimit[], prices: ModelPrice[] = []): void {
    this.meters = meters;
    this.limits = limits;
    this.prices = prices;
    this.totals.clear();
  }

  /** The spend a call costs, per currency, from every matching meter (spendFor). */
  spendFor(call: MeteredCall): MeterReading {
    return spendFor(this.meters, call);
  }

  /**
   * Checks every limit that applies to `subject` for the currencies this call
   * spends; refuses when one is already used up, otherwise records the spend.
   */
  charge(
    subject: string,
    spend: Record<string, number>,
    now = Date.now(),
    /** Currencies checked though nothing is spent in them: a meter of theirs failed (MeterReading). */
    alsoChecked: string[] = [],
  ): BudgetRefusal | undefined {
    const spent = Object.keys(spend).filter((currency) => (spend[currency] ?? 0) > 0);
    const over = this.check(subject, [...new Set([...spent, ...alsoChecked])], now);
    if (!over) this.record(subject, spend, now);
    return over;
  }

  /** The first limit on these currencies that `subject` has used up, if any. */
  check(subject: string, currencies: string[], now = Date.now()): BudgetRefusal | undefined {
    if (currencies.length === 0) return undefined;
    for (const limit of this.limits) {
      if (!currencies.includes(limit.currency) || !scopeApplies(limit.scope, subject)) continue;
      const length = WINDOW_MS[limit.window];
      const start = Math.floor(now / length) * length;
      const used = this.used(limit.scope, limit.currency, start);
      if (used >= limit.max) {
        return {
          currency: limit.currency,
          window: limit.window,
          used,
          max: limit.max,
          retryAfterSeconds: Math.max(1, Math.ceil((start + length - now) / 1000)),
        };
      }
    }
    return undefined;
  }

  /** Appends a spend (durably, before counting it) whatever the limits say: it happened. */
  record(subject: string, spend: Record<string, number>, now = Date.now()): void {
    const lines = Object.entries(spend)
      .filter(([, amount]) => amount > 0)
      .map(([currency, amount]) => ({
        ts: new Date(now).toISOString(),
        ts_ms: now,
        subject,
        currency,
        amount,
      }));
    if (lines.length === 0) return;
    appendJsonLines(this.file, lines);
    this.usage.push(...lines);
    for (const line of lines) this.totals.add(line);
  }

  /** A model call's spend from its reported usage: `tokens`, and `usd` when a price names the model. */
  modelSpend(usage: ModelUsage): Record<string, number> {
    return modelSpendOf(usage, this.prices);
  }

  /**
   * Every limit (those that bind `subject` when given) with what its window
   * has used so far, what is left, and when the window resets.
   */
  standing(subject?: string, now = Date.now()): LimitStanding[] {
    return limitStanding(this.limits, (scope, currency, since) =>
      this.used(scope, currency, since),
    )(subject, now);
  }

  private used(scope: string, currency: string, since: number): number {
    return this.totals.used(scope, currency, since);
  }
}

/**
 * What `subject` (and everything under it) has spent since `since`, per
 * currency, read from audit/usage.jsonl without touching it: `worker ls`.
 */
export function spentSince(
  auditDir: string,
  subject: string,
  since: number,
): Record<string, number> {
  const spent: Record<string, number> = {};
  for (const line of readUsage(join(auditDir, "usage.jsonl"), since)) {
    if (!scopeApplies(subject, line.subject)) continue;
    spent[line.currency] = (spent[line.currency] ?? 0) + line.amount;
  }
  return spent;
}

/** What a scope has spent in one currency since a time (ms). */
export type SpentSince = (scope: string, currency: string, since: number) => number;

/**
 * Limits as `roster budget` shows them, from any account of what was spent
 * (the gateway's own, or the console's running sums): the windows are the
 * same either way.
 */
export function limitStanding(
  limits: ScopedLimit[],
  spent: SpentSince,
): (subject?: string, now?: number) => LimitStanding[] {
  return (subject, now = Date.now()) =>
    limits
      .filter((limit) => !subject || scopeApplies(limit.scope, subject))
      .map((limit) => {
        const length = WINDOW_MS[limit.window];
        const start = Math.floor(now / length) * length;
        const used = spent(limit.scope, limit.currency, start);
        return {
          scope: limit.scope,
          currency: limit.currency,
          window: limit.window,
          max: limit.max,
          used,
          remaining: Math.max(0, limit.max - used),
          resets_at: new Date(start + length).toISOString(),
        };
      });
}

/** The start of the current window of this length (windows are epoch-aligned). */
export function windowStart(window: Window, now = Date.now()): number {
  const length = WINDOW_MS[window];
  return Math.floor(now / length) * length;
}
