import { EventEmitter } from "node:events";
import { type FSWatcher, mkdirSync, readdirSync, watch } from "node:fs";
import { join } from "node:path";
import { channelsDir } from "../channels/store.ts";
import type { RosterPaths } from "../config/paths.ts";

/**
 * What the console's open pages hear about, as it happens: a gateway
 * decision, a gate filed or decided, a turn in a channel. The sources are
 * files other processes write too (a `roster approve` at a terminal, a
 * `roster run` with its own gateway), so the feed watches the files rather
 * than hooking one process's code. Each event is only a nudge naming its
 * kind; a page that cares asks for its fresh fragment. Watchers that fail
 * (a folder removed) are dropped, never thrown.
 */
export type FeedEvent = "decision" | "gate" | "turn";

export class ConsoleFeed {
  private readonly events = new EventEmitter();
  private readonly watchers = new Map<string, FSWatcher>();

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
      watcher.on("error", () => {
        watcher.close();
        this.watchers.delete(dir);
      });
      this.watchers.set(dir, watcher);
    } catch {
      // not a folder (or gone): nothing to watch
    }
  }

  private emit(event: FeedEvent): void {
    this.events.emit("event", event);
  }

  subscribe(listener: (event: FeedEvent) => void): () => void {
    this.events.on("event", listener);
    return () => this.events.off("event", listener);
  }

  close(): void {
    for (const watcher of this.watchers.values()) watcher.close();
    this.watchers.clear();
    this.events.removeAllListeners();
  }
}
