import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { LoadedConfig } from "../../ground/config/load.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { scheduleZone } from "../../ground/config/time-zone.ts";
import { workerView } from "../../ground/config/worker-view.ts";
import { readLive, updateList } from "../../records/task-list/store.ts";
import { fireTemplates, HEARTBEAT_ID, syncHeartbeat } from "../../work/tasks/templates.ts";

/**
 * The dispatcher's calendar: for each worker, its heartbeat template kept in
 * step with the config, then every recurring template whose time has come
 * fired (tasks/templates.ts), all under the list's lock so a worker's
 * set_tasks never races a fire. The time zone is org.toml's
 * `[schedule] timezone`, else the host's.
 */
/**
 * When each worker's last heartbeat was filed, as servers before templates
 * kept it (state/heartbeats.json): read once per worker so an upgrade
 * doesn't beat again at once.
 */
function legacyHeartbeats(paths: RosterPaths): Record<string, string> {
  try {
    return JSON.parse(readFileSync(join(paths.state, "heartbeats.json"), "utf8")) as Record<
      string,
      string
    >;
  } catch {
    return {};
  }
}

/** Fires what is due; returns one line per fire (or skip) for the server's log. */
export async function fireDueTemplates(
  paths: RosterPaths,
  config: LoadedConfig,
  now: Date,
): Promise<string[]> {
  // an invalid config starts nothing: dispatch refuses those runs anyway
  if (config.errors.length) return [];
  const zone = scheduleZone(config.org);
  const notes: string[] = [];
  let legacy: Record<string, string> | undefined;
  for (const worker of config.workers.keys()) {
    const heartbeat = workerView(config, worker)?.heartbeat;
    const seen = readLive(paths, worker);
    const hasBeat = seen.recurring?.some((template) => template.id === HEARTBEAT_ID) ?? false;
    const due = seen.recurring?.some((template) => Date.parse(template.next_at) <= now.getTime());
    const resync = heartbeat ? changed(seen, heartbeat) : hasBeat;
    // the common tick: nothing to sync and nothing due, so nothing is locked or written
    if (!due && !resync) continue;
    legacy ??= legacyHeartbeats(paths);
    const before = legacy[worker];
    await updateList(
      paths,
      worker,
      (current) => {
        const synced = syncHeartbeat(current, heartbeat, now, zone, before);
        const base = synced ? { ...current, ...synced } : current;
        const fired = fireTemplates(base, now, zone);
        for (const line of fired?.notes ?? [])
          notes.push(
            line.startsWith(`${HEARTBEAT_ID}: filed`)
              ? `heartbeat filed for ${worker}`
              : `${worker}: ${line}`,
          );
        return fired?.list ?? synced;
      },
      { finished: false },
    );
  }
  return notes;
}

function changed(
  list: ReturnType<typeof readLive>,
  heartbeat: { every: string; prompt: string; ceilingMin: number },
): boolean {
  const beat = list.recurring?.find((template) => template.id === HEARTBEAT_ID);
  return (
    !beat ||
    beat.every !== heartbeat.every ||
    beat.prompt !== heartbeat.prompt ||
    beat.ceiling_min !== heartbeat.ceilingMin
  );
}
