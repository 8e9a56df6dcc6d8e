import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { type Gate, TERMINAL } from "../../records/gates/gate-record.ts";
import { OPEN_STATES, type TaskList } from "../../records/task-list/store.ts";

/**
 * What waits, counted for a scrape without reading every gate and task file
 * each time, and without holding the server's loop while reading: the files
 * are read with the asynchronous calls (the reads run beside the loop), a
 * gate that reached an end (executed, denied) is remembered and never read
 * again, and a worker's task list is read again only when its size or time
 * changed. A scrape reads one folder listing per worker, the gates still
 * undecided or new, and the task lists that changed.
 */
export class WaitingCounts {
  /** "worker/g-…" of gates that reached an end: they never wait again. */
  private readonly ended = new Set<string>();
  /** A worker's task list as last read: its size and time, and how many of its tasks wait. */
  private readonly lists = new Map<string, { stamp: string; waiting: number }>();

  constructor(private readonly paths: RosterPaths) {}

  private async workers(): Promise<string[]> {
    try {
      return await readdir(join(this.paths.data, "workers"));
    } catch {
      return []; // no worker yet
    }
  }

  /** Proposals waiting for a person's decision, across workers. */
  async approvals(): Promise<number> {
    let pending = 0;
    const seen = new Set<string>();
    for (const worker of await this.workers()) {
      const dir = join(this.paths.data, "workers", worker, "gates");
      let entries: string[];
      try {
        entries = await readdir(dir);
      } catch {
        continue; // a worker with no gates yet
      }
      for (const entry of entries) {
        if (!/^g-[0-9a-f]+\.json$/.test(entry)) continue;
        const key = `${worker}/${entry}`;
        seen.add(key);
        if (this.ended.has(key)) continue;
        const gate = await readJson<Gate>(join(dir, entry));
        if (!gate) continue; // being written: counted at the next scrape
        if (gate.state === "pending") pending++;
        else if (TERMINAL.has(gate.state)) this.ended.add(key);
      }
    }
    // a worker archived takes its gates along
    for (const key of this.ended) if (!seen.has(key)) this.ended.delete(key);
    return pending;
  }

  /** Tasks not yet run (pending or claimed), by worker. */
  async tasks(): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    for (const worker of await this.workers()) {
      const file = join(this.paths.data, "workers", worker, "tasks", "tasks.json");
      let stamp: string;
      try {
        const facts = await stat(file);
        stamp = `${facts.size}:${facts.mtimeMs}`;
      } catch {
        this.lists.delete(worker);
        continue; // no list yet
      }
      const known = this.lists.get(worker);
      if (known?.stamp === stamp) {
        counts.set(worker, known.waiting);
        continue;
      }
      const list = await readJson<TaskList>(file);
      if (!list || !Array.isArray(list.tasks)) continue;
      const waiting = list.tasks.filter((task) => OPEN_STATES.has(task.state)).length;
      this.lists.set(worker, { stamp, waiting });
      counts.set(worker, waiting);
    }
    for (const worker of this.lists.keys()) if (!counts.has(worker)) this.lists.delete(worker);
    return counts;
  }
}

async function readJson<T>(file: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(file, "utf8")) as T;
  } catch {
    return undefined;
  }
}
