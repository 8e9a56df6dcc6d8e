import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Budgets } from "../../runner/boundary/gateway/spend/budget.ts";
import type { ScopedLimit } from "../../runner/ground/config/grant-schema.ts";

/**
 * The budgets' counts as the door asks them, call after call: every spend in
 * a window counted once, by every limit whose scope it falls in, a new
 * window starting from nothing, a restart counting what the ledger says, and
 * limits changed at run time counting what was spent before them.
 */
const audit = mkdtempSync(join(tmpdir(), "roster-budget-windows-"));
afterAll(() => rmSync(audit, { recursive: true, force: true }));

const LIMITS: ScopedLimit[] = [
  { scope: "org", currency: "calls", window: "minute", max: 5 },
  { scope: "org/elf", currency: "calls", window: "day", max: 8 },
];
const minute = 60_000;
// a minute's start, well inside a day (windows are epoch-aligned)
const t0 = Math.floor(Date.now() / 86_400_000) * 86_400_000 + 3 * minute;
const one = { calls: 1 };

describe("budget windows counted call by call", () => {
  it("refuses at each limit's edge, counting every scope a spend falls in", () => {
    const budgets = new Budgets(audit, [], LIMITS);
    for (let i = 0; i < 5; i++) expect(budgets.charge("org/elf", one, t0 + i, [])).toBeUndefined();
    expect(budgets.charge("org/elf", one, t0 + 10, [])).toMatchObject({
      window: "minute",
      used: 5,
    });
    // the next minute starts from nothing; the day goes on counting elf's 5
    for (let i = 0; i < 3; i++)
      expect(budgets.charge("org/elf", one, t0 + minute + i, [])).toBeUndefined();
    expect(budgets.charge("org/elf", one, t0 + minute + 10, [])).toMatchObject({
      window: "day",
      used: 8,
    });
    // another worker shares the org's minute (elf's 3 in it), not elf's day
    for (let i = 0; i < 2; i++)
      expect(budgets.charge("org/imp", one, t0 + minute + 20 + i, [])).toBeUndefined();
    expect(budgets.charge("org/imp", one, t0 + minute + 30, [])).toMatchObject({
      window: "minute",
      used: 5,
    });
    // a spend recorded whatever the limits say is counted too
    budgets.record("org/imp", { calls: 4 }, t0 + 2 * minute);
    expect(budgets.check("org/imp", ["calls"], t0 + 2 * minute + 1)).toBeUndefined();
    budgets.record("org/imp", { calls: 1 }, t0 + 2 * minute + 2);
    expect(budgets.check("org/imp", ["calls"], t0 + 2 * minute + 3)).toMatchObject({ used: 5 });
  });

  it("counts the same after a restart, and under limits changed at run time", () => {
    const again = new Budgets(audit, [], LIMITS);
    const standing = again.standing("org/elf", t0 + 2 * minute + 5);
    expect(standing.map((limit) => [limit.window, limit.used])).toEqual([
      ["minute", 5],
      ["day", 8],
    ]);
    again.reconfigure([], [{ scope: "org/imp", currency: "calls", window: "day", max: 7 }]);
    expect(again.check("org/imp", ["calls"], t0 + 2 * minute + 5)).toMatchObject({
      window: "day",
      used: 7,
    });
  });
});
