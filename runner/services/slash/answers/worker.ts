import { loadConfig } from "../../../ground/config/load.ts";
import { pauseOf, pauseSaid, pauseWorker, resumeWorker } from "../../../records/workers/pause.ts";
import { formatWorkerRows, workerRow, workerRows } from "../../workers/list.ts";
import type { CommandContext } from "../context.ts";

/** `/worker ls | show [name] | pause <name> [reason] | resume <name>`. */
export function workerAnswer(
  context: CommandContext,
  sub: string,
  args: Record<string, string>,
): string {
  const { paths, asker } = context;
  if (sub === "ls") return formatWorkerRows(workerRows(paths));
  const name = args.name ?? context.worker;
  if (!loadConfig(paths.config).workers.has(name)) return `no worker named "${name}"`;
  if (sub === "show") {
    const row = workerRow(paths, name);
    const pause = pauseOf(paths, name);
    return [formatWorkerRows([row]), ...(pause ? ["", pauseSaid(name, pause)] : [])].join("\n");
  }
  if (sub === "pause") {
    const pause = pauseWorker(paths, name, asker.user, args.reason);
    return `${pauseSaid(name, pause)}; a run already going goes on to its end`;
  }
  return resumeWorker(paths, name) ? `${name} may run again` : `${name} was not paused`;
}
