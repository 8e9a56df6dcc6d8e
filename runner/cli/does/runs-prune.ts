import type { RosterPaths } from "../../ground/config/paths.ts";
import { ageMs, describeSize, STORE_DEFAULTS } from "../../ground/config/store-limits.ts";
import { RosterError } from "../../ground/errors.ts";
import { pruneRuns } from "../../work/runs/retention.ts";

/**
 * `roster runs prune`: the retention pass a run start makes once an hour
 * (retention.ts), now and with an age of the caller's choosing. Without
 * --older-than it keeps what org.toml keeps, so the config must load.
 */
const size = (bytes: number) => (bytes ? describeSize(bytes) : "0");

export async function pruneRunsCommand(
  paths: RosterPaths,
  flags: { olderThan?: string; worker?: string; json?: boolean },
): Promise<void> {
  let age = flags.olderThan;
  if (age === undefined) {
    // the config's whole schema costs most of a second to load: only when it is needed
    const { loadValidConfig } = await import("../../ground/config/valid-config.ts");
    const config = loadValidConfig(
      paths,
      "so [store] scratch_keep can't be read (or give --older-than)",
    );
    age = config.org.store?.scratch_keep ?? STORE_DEFAULTS.scratch_keep;
  }
  const olderThanMs = ageMs(age);
  if (olderThanMs === undefined)
    throw new RosterError(
      `--older-than must be a whole number and a unit, s, m, h or d, like "3d" (got "${age}")`,
      { exitCode: 2 },
    );
  const result = await pruneRuns({
    paths,
    olderThanMs,
    by:
      flags.olderThan === undefined
        ? "roster runs prune ([store] scratch_keep)"
        : "roster runs prune",
    ...(flags.worker ? { worker: flags.worker } : {}),
  });
  if (flags.json) process.stdout.write(`${JSON.stringify({ older_than: age, ...result })}\n`);
  else {
    for (const run of result.pruned)
      process.stdout.write(
        `${run.worker} ${run.id}: dropped ${run.dropped.map((name) => `${name}/`).join(" and ")} (${size(run.freed)})\n`,
      );
    process.stdout.write(
      `${result.pruned.length} run(s) ended more than ${age} ago had scratch; ${size(result.freed)} freed; their records are kept\n`,
    );
  }
  for (const failed of result.failed)
    process.stderr.write(`roster: run ${failed.id} of ${failed.worker}: ${failed.error}\n`);
  if (result.failed.length) process.exitCode = 1;
}
