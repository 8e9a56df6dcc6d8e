import { scopeApplies } from "../judging/judge.ts";
import type { UsageLine } from "./ledger.ts";

/**
 * What a scope has spent in a currency since a window's start, kept as a
 * running total once asked: the first question for a window reads the
 * ledger's lines (once per window and limit), every spend after it adds to
 * the totals it falls in. A metered call's check is then as cheap on the
 * month's millionth call as on its first; before, each check read every
 * spend since the month began, on the loop every box's requests share.
 */
const MOST_TOTALS = 256;

interface Total {
  scope: string;
  currency: string;
  since: number;
  used: number;
}

export class WindowTotals {
  private readonly totals = new Map<string, Total>();

  constructor(private readonly lines: () => readonly UsageLine[]) {}

  used(scope: string, currency: string, since: number): number {
    const key = `${scope}\u0000${currency}\u0000${since}`;
    const known = this.totals.get(key);
    if (known) return known.used;
    let used = 0;
    for (const line of this.lines()) {
      if (line.ts_ms >= since && line.currency === currency && scopeApplies(scope, line.subject))
        used += line.amount;
    }
    // totals of windows gone by are never asked again: past a bound, all are read anew
    if (this.totals.size >= MOST_TOTALS) this.totals.clear();
    this.totals.set(key, { scope, currency, since, used });
    return used;
  }

  /** A spend just recorded: added to every total whose window and scope it falls in. */
  add(line: UsageLine): void {
    for (const total of this.totals.values()) {
      if (
        total.currency === line.currency &&
        line.ts_ms >= total.since &&
        scopeApplies(total.scope, line.subject)
      )
        total.used += line.amount;
    }
  }

  /** The limits changed: every total is read anew when next asked. */
  clear(): void {
    this.totals.clear();
  }
}
