import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Budgets } from "../../runner/boundary/gateway/spend/budget.ts";
import type { ScopedLimit } from "../../runner/ground/config/grant-schema.ts";
import { SpendSummary } from "../../runner/services/console/spend-summary.ts";

/**
 * The console's running sums of spend (runner/services/console/spend-summary.ts) over
 * a usage log the gateway's own Budgets wrote: every limit's window shows
 * what `roster budget` shows (Budgets.standing), per day per worker sums add
 * up, and a refresh reads only what was appended.
 */
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
// a fixed "now": 2026-12-02 10:37:20.500 UTC, inside every kind of window
const NOW = Date.UTC(2026, 11, 2, 10, 37, 20, 500);

const LIMITS: ScopedLimit[] = [
  { scope: "org", currency: "tokens", window: "minute", max: 1_000 },
  { scope: "org", currency: "tokens", window: "hour", max: 10_000 },
  { scope: "org/elf", currency: "tokens", window: "day", max: 50_000 },
  { scope: "org/elf", currency: "usd", window: "day", max: 1 },
  { scope: "org/imp", currency: "usd", window: "month", max: 20 },
];

describe("the console's running sums of spend", () => {
  let dir: string;
  let budgets: Budgets;
  const summaryFile = () => join(dir, "spend.json");

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "roster-spend-summary-"));
    budgets = new Budgets(join(dir, "audit"), [], LIMITS);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** Spends spread over 40 days back, this hour, this minute and the one before. */
  function spendAround(): void {
    const when = [
      NOW - 40 * DAY,
      NOW - 29 * DAY - 5 * HOUR,
      NOW - 3 * DAY,
      NOW - DAY - HOUR,
      NOW - 11 * HOUR, // yesterday, still inside the month window
      NOW - 2 * HOUR,
      NOW - 30 * 60_000, // this hour
      NOW - 65_000, // the minute before
      NOW - 20_000, // this minute
      NOW,
    ];
    for (const [index, at] of when.entries()) {
      budgets.record("org/elf", { tokens: 100 + index, usd: 0.0123 * (index + 1) }, at);
      budgets.record("org/imp", { tokens: 7 * index, usd: 0.5 }, at);
    }
  }

  it("gives every limit's window the spend `roster budget` gives it", () => {
    spendAround();
    const summary = new SpendSummary(join(dir, "audit"), summaryFile());
    expect(summary.refresh(NOW)).toBeGreaterThan(0);
    for (const subject of [undefined, "org/elf", "org/imp"]) {
      const ours = summary.standing(LIMITS, subject, NOW);
      const theirs = budgets.standing(subject, NOW);
      expect(ours.map((limit) => ({ ...limit, used: Number(limit.used.toFixed(9)) }))).toEqual(
        theirs.map((limit) => ({ ...limit, used: Number(limit.used.toFixed(9)) })),
      );
    }
    // the windows really differ: a minute saw less than an hour, an hour less than a day
    const [minute, hour, day] = summary.standing(LIMITS, undefined, NOW);
    expect(minute?.used).toBe(108 + 109 + 7 * 8 + 7 * 9);
    expect(hour?.used).toBeGreaterThan(minute?.used ?? 0);
    expect(day?.used).toBeGreaterThan(0);
  });

  it("sums each worker's spend per UTC day over the last 30 days", () => {
    spendAround();
    const summary = new SpendSummary(join(dir, "audit"), summaryFile());
    summary.refresh(NOW);
    const days = summary.days(30, NOW);
    expect(days).toHaveLength(30);
    expect(days.at(-1)?.day).toBe("2026-12-02");
    expect(days[0]?.day).toBe("2026-11-03");
    // today: the five spends from 2 hours back on (10:37 minus 11 hours is yesterday)
    const today = days.at(-1)?.workers.elf;
    expect(today?.tokens).toBe(105 + 106 + 107 + 108 + 109);
    expect(today?.usd).toBeCloseTo(0.0123 * (6 + 7 + 8 + 9 + 10), 9);
    // 40 days back is outside; 29 days and 5 hours back is the window's first day
    const all = days.reduce((sum, day) => sum + (day.workers.imp?.usd ?? 0), 0);
    expect(all).toBeCloseTo(0.5 * 9, 9);
    expect(days[0]?.workers.elf?.tokens).toBe(101);
  });

  it("reads only what was appended, waits for a torn line, and survives a new process", () => {
    budgets.record("org/elf", { tokens: 10 }, NOW - 1000);
    const first = new SpendSummary(join(dir, "audit"), summaryFile());
    const size = first.refresh(NOW);
    expect(size).toBeGreaterThan(0);
    expect(first.refresh(NOW)).toBe(0);
    const log = join(dir, "audit", "usage.jsonl");
    // half a line: it waits until its end is written
    appendFileSync(log, `{"ts_ms":${NOW - 500},"subject":"org/elf",`);
    expect(first.refresh(NOW)).toBe(0);
    appendFileSync(log, '"currency":"tokens","amount":5}\n');
    const again = new SpendSummary(join(dir, "audit"), summaryFile());
    expect(again.refresh(NOW)).toBeGreaterThan(0);
    expect(again.spent("org", "tokens", Math.floor(NOW / DAY) * DAY)).toBe(15);
    // a log that was replaced is summed again from its start
    writeFileSync(
      log,
      `${JSON.stringify({ ts_ms: NOW, subject: "org/imp", currency: "tokens", amount: 3 })}\n`,
    );
    again.refresh(NOW);
    expect(again.spent("org", "tokens", Math.floor(NOW / DAY) * DAY)).toBe(3);
  });
});
