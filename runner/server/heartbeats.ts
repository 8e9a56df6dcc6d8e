import { readFileSync } from "node:fs";
import { join } from "node:path";
import { loadConfig, workerView } from "../config/load.ts";
import type { RosterPaths } from "../config/paths.ts";
import { replaceFileSync } from "../files/atomic-replace.ts";
import { newTaskId, readTasks, updateTasks } from "../tasks/store.ts";

/**
 * Heartbeats: for each worker org.toml gives one, a task filed every
 * `every`, but never while the last heartbeat task is still open (so a slow
 * or failing one can't pile up). When each worker's last one was filed is
 * kept in state/heartbeats.json; a worker never seen gets its first at once.
 */
export const HEARTBEAT_FILER = "heartbeat";

function stateFile(paths: RosterPaths): string {
  return join(paths.state, "heartbeats.json");
}

function readLast(paths: RosterPaths): Record<string, string> {
  try {
    return JSON.parse(readFileSync(stateFile(paths), "utf8")) as Record<string, string>;
  } catch {
    return {};
  }
}

/** Files the heartbeat tasks that are due; returns the workers it filed for. */
export async function fileDueHeartbeats(paths: RosterPaths, now = new Date()): Promise<string[]> {
  const config = loadConfig(paths.config, { vaultDir: paths.vault });
  // an invalid config starts nothing: dispatch refuses those runs anyway
  if (config.errors.length) return [];
  const last = readLast(paths);
  const filed: string[] = [];
  for (const name of config.workers.keys()) {
    const heartbeat = workerView(config, name)?.heartbeat;
    if (!heartbeat) continue;
    const previous = last[name] ? Date.parse(last[name]) : Number.NEGATIVE_INFINITY;
    if (now.getTime() - previous < heartbeat.everyMs) continue;
    const open = readTasks(paths, name).tasks.some(
      (task) =>
        task.filed_by === HEARTBEAT_FILER && (task.state === "pending" || task.state === "claimed"),
    );
    if (open) continue;
    await updateTasks(paths, name, (list) => [
      ...list.tasks,
      {
        id: newTaskId(),
        prompt: heartbeat.prompt,
        ceiling_min: heartbeat.ceilingMin,
        state: "pending",
        filed_at: now.toISOString(),
        filed_by: HEARTBEAT_FILER,
      },
    ]);
    last[name] = now.toISOString();
    filed.push(name);
  }
  if (filed.length)
    replaceFileSync(stateFile(paths), `${JSON.stringify(last, null, 2)}\n`, { mode: 0o644 });
  return filed;
}
