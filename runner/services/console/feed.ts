import { EventEmitter } from "node:events";
import { existsSync, type FSWatcher, mkdirSync, readdirSync, watch } from "node:fs";
import { join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { channelsDir } from "../../records/channels/store.ts";
import { readRecord, runDir } from "../../records/run-records/run-record.ts";

/**
 * What the console's open pages hear about, as it happens: a gateway
 * decision, a gate filed or decided, a turn in a channel. The sources are
 * files other processes write too (a `roster approve` at a terminal, a
 * `roster run` with its own gateway), so the feed watches the files rather
 * than hooking one process's code. Each event is only a nudge naming its
 * kind (and, for a run's, which run: "worker/id"); a page that cares asks for
 * its fresh fragment. A run is watched from when its folder appears (or a
 * page shows it running) until its record says it ended: "run" when the
 * record changes, "activity" when the box wrote an event. Watchers that fail
 * (a folder removed) are dropped, never thrown, and their number is bounded.
 */
export type FeedEvent = "decision" | "gate" | "turn" | "run" | "activity";

/** At most this many runs watched at once (each holds a descriptor); gates and channels apart. */
const MAX_RUN_WATCHERS = 512;
const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export class ConsoleFeed {
  private readonly events = new EventEmitter();
  private readonly watchers = new Map<string, FSWatcher>();
  /** The folders of runs among them (bounded apart). */
  private readonly runs = new Set<string>();

  constructor(
    private readonly paths: RosterPaths,
    private readonly workers: () => string[],
  ) {
    // every open page listens; the count is bounded by the server's connection limit
    this.events.setMaxListeners(0);
  }

  start(): void {
    mkdirSync(this.paths.audit, { recursive: true });
    this.watchDir(this.paths.audit, (name) => {
      if (name === "decisions.jsonl") this.emit("decision");
    });
    this.watchGates();
    const channels = channelsDir(this.paths);
    mkdirSync(channels, { recursive: true });
    this.watchDir(channels, () => this.watchChannels());
    this.watchChannels();
    this.watchRuns();
  }

  /** New runs of every worker (called on start and on each page view, as workers come). */
  watchRuns(): void {
    for (const worker of this.workers()) {
      if (!SAFE_NAME.test(worker)) continue;
      const dir = join(this.paths.state, "runs", worker);
      if (this.watchers.has(dir)) continue;
      try {
        mkdirSync(dir, { recursive: true });
      } catch {
        continue;
      }
      this.watchDir(dir, (id) => {
        if (!SAFE_NAME.test(id) || !existsSync(join(dir, id))) return;
        this.watchRun(worker, id);
        this.emit("run", `${worker}/${id}`);
      });
    }
  }

  /** One run, until its record says it ended (a page showing a running run asks for this). */
  watchRun(worker: string, id: string): void {
    if (!SAFE_NAME.test(worker) || !SAFE_NAME.test(id)) return;
    const dir = runDir(this.paths.state, worker, id);
    if (this.watchers.has(dir) || this.runs.size >= MAX_RUN_WATCHERS) return;
    this.runs.add(dir);
    const which = `${worker}/${id}`;
    this.watchDir(dir, (name) => {
      if (name !== "run.json") {
        if (!name.startsWith(".")) this.emit("activity", which);
        return;
      }
      this.emit("run", which);
      const record = readRecord(dir);
      if (record && record.state !== "running") this.unwatch(dir);
    });
  }

  /** Picks up workers added to the config since the start (called on each page view). */
  watchGates(): void {
    for (const worker of this.workers()) {
      const dir = join(this.paths.data, "workers", worker, "gates");
      if (this.watchers.has(dir)) continue;
      try {
        mkdirSync(dir, { recursive: true });
      } catch {
        continue;
      }
      this.watchDir(dir, (name) => {
        if (name.endsWith(".json")) this.emit("gate");
      });
    }
  }

  private watchChannels(): void {
    const root = channelsDir(this.paths);
    let names: string[];
    try {
      names = readdirSync(root);
    } catch {
      return;
    }
    for (const channel of names) {
      const dir = join(root, channel);
      if (!this.watchers.has(dir)) this.watchDir(dir, () => this.emit("turn"));
    }
  }

  private watchDir(dir: string, onName: (name: string) => void): void {
    try {
      const watcher = watch(dir, { persistent: false }, (_type, name) => {
        if (typeof name === "string") onName(name);
      });
      watcher.on("error", () => this.unwatch(dir));
      this.watchers.set(dir, watcher);
    } catch {
      // not a folder (or gone): nothing to watch
      this.runs.delete(dir);
    }
  }

  private unwatch(dir: string): void {
    this.watchers.get(dir)?.close();
    this.watchers.delete(dir);
    this.runs.delete(dir);
  }

  private emit(event: FeedEvent, about = ""): void {
    this.events.emit("event", event, about);
  }

  subscribe(listener: (event: FeedEvent, about: string) => void): () => void {
    this.events.on("event", listener);
    return () => this.events.off("event", listener);
  }

  close(): void {
    for (const watcher of this.watchers.values()) watcher.close();
    this.watchers.clear();
    this.runs.clear();
    this.events.removeAllListeners();
  }
}
