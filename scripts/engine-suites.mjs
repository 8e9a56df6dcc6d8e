// The engine suites that must run alone: the engine lane of scripts/test-lanes.mjs
// runs FIRST_SUITES, then every other engine suite two files at a time (a box
// test spends much of its time waiting on the engine, so one file at a time
// left a core idle), then SOLO_SUITES one after another. Each is here for a
// reason a second file beside it would break or blur:
import { suitesThere } from "./host-suites.mjs";

/**
 * Run before any other engine suite, alone: it restarts dockerd, and every box
 * then running would die with it (the matrix passes wait until it is done).
 */
export const FIRST_SUITES = {
  "test/security/faults.test.ts": "restarts the engine",
};

export const SOLO_SUITES = {
  // doctor --fix rewrites daemon.json and reloads dockerd
  "test/box/gvisor.test.ts": "reloads the engine",
  // a fork bomb, a memory hog and an outside host on fixed addresses
  "test/security/escape.test.ts": "exhausts its box and owns 198.51.100.0/30",
  // 20,000 connections and the server's memory, measured
  "test/security/door-bounds.test.ts": "measures the server's memory under a flood",
  "test/security/load.test.ts": "ten boxes and three sessions at once, measured",
  // it fills the host's disk toward roster's reserve
  "test/box/disk-limits.test.ts": "fills the host's disk",
  // a 200 MB store snapshotted 14 times, and snapshots in bounded time
  "test/store/snapshot-disk.test.ts": "measures disk use and time",
  "test/store/hostile-store.test.ts": "bounds a snapshot's time",
  // prune and toolchain clean-up act on every deployment's images and volumes
  "test/box/tools-volume.test.ts": "prunes the engine's volumes",
  "test/box/toolchain.test.ts": "removes every toolchain image of elf",
  // a killed runner's box is reaped by whichever roster starts next
  "test/server/server.test.ts": "reaps orphans engine-wide",
  "test/box/offline-base.test.ts": "may make and retag the base",
  // windows of a few seconds, held to a bound
  "test/box/run.test.ts": "a ceiling's kill held to a bound",
  "test/box/stall.test.ts": "stall windows of seconds",
  "test/box/mcp.test.ts": "an MCP deadline held to a bound",
  "test/sessions/ceilings.test.ts": "ceilings of seconds",
  "test/server/attest.test.ts": "a ceiling of seconds",
  "test/listeners/chat-approvals.test.ts": "an offer that lapses in under a second",
  "test/console/overview.test.ts": "a live page held to a second",
  // a box outlives its killed runner while restores race it: any roster starting beside it reaps it
  "test/store/restore-races.test.ts": "keeps an orphaned box running",
  // 600 MB to a box's stdout while another box's door is held to a latency bound
  "test/server/output-flood.test.ts": "floods a box's output; door latency held to a bound",
};

/** The suites of a list, each checked to be there (a renamed one would quietly run two at a time). */
export function checkedSuites(root, list) {
  return suitesThere(root, Object.keys(list), "scripts/engine-suites.mjs");
}
