// What one test file may cost in one pass, in seconds, as measured by
// test/support/timing-reporter.ts: `npm test`'s closing summary names every
// file over its budget (scripts/test-timings.mjs). A budget is a promise
// about the suite's cost, so a file that needs more says why here, and a
// new slow file shows up in the summary the run it lands.

/** Any file not named below. */
export const DEFAULT_BUDGET = 40;

/** Files that need more, each with why. */
export const BUDGETS = {};

/** The budget of one file in one pass. */
export function budgetOf(file, _pass) {
  return BUDGETS[file]?.seconds ?? DEFAULT_BUDGET;
}
