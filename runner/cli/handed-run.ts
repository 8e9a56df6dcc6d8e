import { existsSync } from "node:fs";
import { rosterPaths } from "../ground/config/paths.ts";
import { oldNodeRefusal } from "../ground/host-node.ts";
import { runSocketPath } from "../services/server/state.ts";
import { ourSpelling } from "./aliases.ts";
import { runCommand } from "./does/run.ts";
import { failureStatus } from "./failure.ts";
import { plainRun } from "./run-words.ts";

/**
 * `roster run` while a server runs, started without the command tree: the
 * server already holds the gateway, the engine and the worker's config, so
 * the command only reads its words, hands the run over and relays the
 * answer. bin/roster.mjs tries this first for `run`; undefined means "not
 * taken" (no server's socket, or words only the tree reads) and the whole
 * CLI runs as ever. What runs the command is the tree's own (does/run.ts),
 * so a server gone by the time it connects still gets a local run.
 */
export async function handedRun(argv: readonly string[]): Promise<number | undefined> {
  const run = plainRun(ourSpelling(argv.slice(2)));
  // a Node too old is refused by the tree, in its own words
  if (!run || oldNodeRefusal() || !existsSync(runSocketPath(rosterPaths()))) return undefined;
  try {
    await runCommand(run.worker, run.words, run.flags);
    return typeof process.exitCode === "number" ? process.exitCode : 0;
  } catch (error) {
    return failureStatus(error);
  }
}
