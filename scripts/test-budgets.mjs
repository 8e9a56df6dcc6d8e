// What one test file may cost in one pass, in seconds, as measured by
// test/support/timing-reporter.ts: `npm test`'s closing summary names every
// file over its budget (scripts/test-timings.mjs). A budget is a promise
// about the suite's cost, so a file that needs more says why here, and a new
// slow file shows up in the summary the run it lands. The figures leave room
// for a machine half as fast as the one they were measured on (bench/NOTES.md,
// "The suite in 25 minutes").

/** Any file not named below, in any pass. */
export const DEFAULT_BUDGET = 30;

/** Files that need more, each with why; `passes` where one pass needs more still. */
export const BUDGETS = {
  "test/box/agent-codex.test.ts": {
    seconds: 120,
    why: "its first run builds Codex's layer on the box image (a 420 MB native package fetched and copied in); then two real runs",
  },
  "test/box/agent-claude.test.ts": {
    seconds: 120,
    why: "its first run builds Claude Code's layer on the box image (a 400 MB native package fetched and copied in); then two real runs",
  },
  "test/security/agent-escape.test.ts": {
    seconds: 150,
    why: "a real run each of Claude Code and Codex, each of which may first build its agent's layer on the box image; each probe sweeps the box's files, the agent's 400 MB package among them (measured 46 s with both layers already built)",
  },
  "test/unit/memory-cli.test.ts": {
    seconds: 45,
    why: "sixteen real roster commands on one deployment, each a process of its own (measured 26 s on a loaded machine)",
  },
  "test/server/ready-boxes.test.ts": {
    seconds: 50,
    why: "nine cases through one real server; one waits out the 10 s idle window, the least the schema allows",
  },
  "test/box/render.test.ts": {
    seconds: 40,
    why: "five pages rendered by a real browser in four real runs; one waits out a 3 s render limit (CI measured 36.5 s for five runs)",
  },
  "test/box/stall.test.ts": {
    seconds: 45,
    why: "four runs, each held past a 4 s silence window (less would cut pi's own start on a slow machine)",
  },
  "test/listeners/slack.test.ts": {
    seconds: 40,
    why: "seven turns through the server and the Socket Mode stand-in, with a dropped link and its reconnects",
  },
  "test/server/output-flood.test.ts": {
    seconds: 45,
    why: "a 600 MB flood read to its bound, and a gateway frozen until the server's health checks (about 10 s) call it dead",
  },
  "test/store/restore-races.test.ts": {
    seconds: 45,
    why: "a 30,000-file restore raced by a run start, and snapshot passes raced by a box swapping folders for links",
  },
  "test/security/escape.test.ts": {
    seconds: 30,
    passes: { podman: 45, runsc: 90 },
    why: "every way out, tried from a real box; under Podman and gVisor the fork bomb and the memory hog take longer to end (Podman measured 32–38 s)",
  },
};

/** The budget of one file in one pass. */
export function budgetOf(file, pass) {
  const named = BUDGETS[file];
  return named?.passes?.[pass] ?? named?.seconds ?? DEFAULT_BUDGET;
}
