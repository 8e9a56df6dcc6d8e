import { readFileSync, statSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { loadConfig } from "../../ground/config/load.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { READY_DEFAULTS } from "../../ground/config/server-schema.ts";
import { errorMessage } from "../../ground/errors.ts";
import { replaceFile } from "../../ground/files/atomic-replace.ts";
import type { ReadySessions, ReadyStart } from "../runs/run-request.ts";
import { type ReadyEntry, ReadyPool } from "./pool.ts";

/**
 * The server's pool (pool.ts) set in its place: sized by org.toml's
 * `[server]` (read again when the file changes), kept under the server's cap
 * together with every other box, and given up a box at a time when a run or a
 * task needs the room.
 */
export function serverReadyPool(options: {
  paths: RosterPaths;
  env: NodeJS.ProcessEnv;
  note: (text: string) => void;
  cap: number;
  /** Boxes running besides the pool's: sessions, runs handed over, tasks. */
  busy: () => number;
}): {
  pool: ReadyPool;
  /** A box for a run or task of this worker (and another made behind it). */
  takeReady: (worker: string) => Promise<ReadyStart | undefined>;
  /** A box for a `box exec` command of this worker (and another made behind it). */
  takeReadyExec: (worker: string) => Promise<ReadyStart | undefined>;
  /** What sessions ask of the pool (the router's ReadySessions). */
  sessions: ReadySessions;
  /** Discards what is stale or idle, refills, and writes state/ready.json for `server status`. */
  tick: () => Promise<void>;
  close: () => Promise<void>;
} {
  const settings = serverSettings(options.paths);
  const status = statusWriter(readyStatusFile(options.paths), () => pool.list(), options.note);
  const pool: ReadyPool = new ReadyPool({
    paths: options.paths,
    env: options.env,
    note: options.note,
    size: () => settings().ready_boxes,
    idleMs: () => settings().ready_idle_secs * 1000,
    room: () => options.busy() + pool.count() < options.cap,
    changed: () => status.write(),
  });
  const makeRoom = () => {
    // a run always runs: ready boxes make way for it
    while (options.busy() + pool.count() > options.cap && pool.evictOne()) {}
  };
  const takeReady = async (worker: string) => {
    const box = await pool.take({ worker });
    makeRoom();
    return box;
  };
  const takeReadyExec = async (worker: string) => {
    const box = await pool.take({ worker, exec: true });
    makeRoom();
    return box;
  };
  const sessions: ReadySessions = {
    take: async (worker, channel) => {
      const box = await pool.take({ worker, channel }, false);
      makeRoom();
      return box;
    },
    want: (worker, channel) => pool.want({ worker, channel }),
  };
  return {
    pool,
    takeReady,
    takeReadyExec,
    sessions,
    tick: async () => {
      pool.tick();
      await pool.measure();
      await status.write();
    },
    close: async () => {
      await pool.close();
      await status.close();
    },
  };
}

/**
 * Writes the pool's list to `file` after every change, one write at a time:
 * a change while a write is under way is written right after it, so the file
 * always ends up naming what the pool holds. `close` removes the file, and
 * nothing is written after it.
 */
function statusWriter(
  file: string,
  list: () => ReadyEntry[],
  note: (text: string) => void,
): { write: () => Promise<void>; close: () => Promise<void> } {
  let closed = false;
  let writing: Promise<void> | undefined;
  let again = false;
  const write = (): Promise<void> => {
    if (closed) return Promise.resolve();
    if (writing) {
      again = true;
      return writing;
    }
    writing = (async () => {
      do {
        again = false;
        await replaceFile(file, `${JSON.stringify(list(), null, 2)}\n`, { mode: 0o644 }).catch(
          (error: unknown) => note(`ready boxes' status not written: ${errorMessage(error)}`),
        );
      } while (again && !closed);
    })().finally(() => {
      writing = undefined;
    });
    return writing;
  };
  return {
    write,
    close: async () => {
      closed = true;
      await writing;
      await rm(file, { force: true });
    },
  };
}

/** Where the server says which ready boxes it holds (`roster server status` reads it). */
export function readyStatusFile(paths: RosterPaths): string {
  return join(paths.state, "ready.json");
}

/** The ready boxes a running server said it holds (none when it said nothing). */
export function readReadyStatus(paths: RosterPaths): ReadyEntry[] {
  try {
    const entries = JSON.parse(readFileSync(readyStatusFile(paths), "utf8")) as unknown;
    return Array.isArray(entries) ? (entries as ReadyEntry[]) : [];
  } catch {
    return [];
  }
}

/** `[server]` of org.toml with its defaults, read again only when the file changed. */
function serverSettings(
  paths: RosterPaths,
): () => { ready_boxes: number; ready_idle_secs: number } {
  const file = join(paths.config, "org.toml");
  let seen = -1;
  let current: { ready_boxes: number; ready_idle_secs: number } = { ...READY_DEFAULTS };
  return () => {
    const mtime = statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? 0;
    if (mtime !== seen) {
      seen = mtime;
      const config = loadConfig(paths.config);
      // a config that does not load keeps no ready boxes: runs will refuse it in its own words
      const server = config.errors.length ? { ready_boxes: 0 } : (config.org.server ?? {});
      current = { ...READY_DEFAULTS, ...server };
    }
    return current;
  };
}
