import { findRun } from "../../../records/run-records/run-record.ts";
import { formatRows, runRows, showRun } from "../../../work/runs/runs-view.ts";
import type { CommandContext } from "../context.ts";

/** `/runs`: the worker's last five runs; `/runs show <id>`: one of its runs, as `roster runs show` has it. */
export function runsAnswer(
  context: CommandContext,
  sub: string,
  args: Record<string, string>,
): string {
  const { paths, worker } = context;
  if (sub === "ls") {
    const rows = runRows(paths.state, worker, 5);
    return rows.length ? formatRows(rows) : `${worker} has no runs yet`;
  }
  const run = findRun(paths.state, args.id ?? "");
  if ("error" in run) return run.error;
  // a person at one worker's surface reads that worker's runs, not another's
  if (run.worker !== worker) return `${run.id} is a run of ${run.worker}, not of ${worker}`;
  return showRun(run, paths.audit);
}
