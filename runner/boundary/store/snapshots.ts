import { constants, existsSync, readdirSync, readFileSync, type Stats } from "node:fs";
import { chmod, type FileHandle, lstat, mkdir, open, readdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { loadConfig } from "../../ground/config/load.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { replaceFile } from "../../ground/files/atomic-replace.ts";
import { type Itemized, type Skipped, storeRsync } from "./rsync.ts";
import { withStoreLock } from "./store-lock.ts";

/**
 * Store snapshots: data/workers/<w>/store-snapshots/<YYYYMMDD-HHMMSS.mmm>/,
 * each a whole copy of the store hard-linked by rsync against the one before
 * (`--link-dest`), so an unchanged file costs one inode entry, not its bytes.
 * A channel store (data/workers/<w>/channel-stores/<ch>, the box's
 * ~/channel/store) keeps its own under channel-store-snapshots/<ch>/. Beside
 * each snapshot a <name>.json says when, why and for which run it was made,
 * and what changed; it is written before the folder takes its name, and a
 * folder still called <name>.partial was never finished.
 *
 * A pass first compares the store with the newest snapshot (a dry run): an
 * unchanged store makes no snapshot. The whole pass holds the worker's store
 * lock (store-lock.ts); the host only ever reads the store with rsync's safe
 * options, chrooted into the store (rsync.ts, confine.ts), so a box of the
 * worker that is still running can't point the pass at a host file.
 */
export const DEFAULT_SNAPSHOTS = 14;

export interface StoreTarget {
  worker: string;
  /** A channel store of the worker instead of its store. */
  channel?: string;
}

export type SnapshotReason = "run" | "sweep" | "before-restore";

export interface SnapshotMeta {
  name: string;
  made_at: string;
  reason: SnapshotReason;
  run?: string;
  added: number;
  changed: number;
  removed: number;
  skipped: Skipped[];
  /** Which paths it added, changed and removed (the first PATHS_KEPT of each; older records have none). */
  paths?: { added: string[]; changed: string[]; removed: string[] };
}

/** How many paths of each kind a snapshot's record names (the counts are always whole). */
export const PATHS_KEPT = 200;

/** What a pass found; `snapshot` is the one it kept (none when the store was unchanged). */
export interface PassResult {
  target: StoreTarget;
  snapshot: SnapshotMeta | undefined;
  /** The snapshot that now holds the store as it is (new, or the unchanged newest). */
  current: string | undefined;
  changes: Itemized;
}

const NAME = /^\d{8}-\d{6}\.\d{3}$/;

export function workerDir(paths: RosterPaths, worker: string): string {
  return join(paths.data, "workers", worker);
}

export function storeDir(paths: RosterPaths, target: StoreTarget): string {
  const dir = workerDir(paths, target.worker);
  return target.channel ? join(dir, "channel-stores", target.channel) : join(dir, "store");
}

export function snapshotsDir(paths: RosterPaths, target: StoreTarget): string {
  const dir = workerDir(paths, target.worker);
  return target.channel
    ? join(dir, "channel-store-snapshots", target.channel)
    : join(dir, "store-snapshots");
}

/** The store whose `.locks/store` guards `target` (a channel store is written by the worker's boxes). */
export function lockStoreOf(paths: RosterPaths, target: StoreTarget): string {
  return storeDir(paths, { worker: target.worker });
}

export function describeTarget(target: StoreTarget): string {
  return target.channel
    ? `${target.worker}'s channel store ${target.channel}`
    : `${target.worker}'s store`;
}

/** `[store] snapshots` from org.toml; the default when unset or when the config can't be read. */
export function snapshotsToKeep(paths: RosterPaths): number {
  try {
    return loadConfig(paths.config).org.store?.snapshots ?? DEFAULT_SNAPSHOTS;
  } catch {
    return DEFAULT_SNAPSHOTS;
  }
}

/** Every finished snapshot, oldest first, with what its record says. */
export function listSnapshots(paths: RosterPaths, target: StoreTarget): SnapshotMeta[] {
  const dir = snapshotsDir(paths, target);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => NAME.test(name))
    .sort()
    .map((name) => {
      try {
        const meta = JSON.parse(readFileSync(join(dir, `${name}.json`), "utf8")) as SnapshotMeta;
        return { ...meta, name };
      } catch {
        return {
          name,
          made_at: "",
          reason: "sweep",
          added: 0,
          changed: 0,
          removed: 0,
          skipped: [],
        };
      }
    });
}

function stamp(date: Date): string {
  const iso = date.toISOString(); // 2026-12-01T20:15:00.123Z
  return `${iso.slice(0, 10).replace(/-/g, "")}-${iso.slice(11, 19).replace(/:/g, "")}.${iso.slice(20, 23)}`;
}

/** A name no snapshot has yet, later than every existing one. */
function freshName(dir: string, newest: string | undefined): string {
  let at = Date.now();
  for (;;) {
    const name = stamp(new Date(at));
    if ((!newest || name > newest) && !existsSync(join(dir, name))) return name;
    at += 1;
  }
}

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/**
 * lstat of a path in the store, each folder on the way opened without
 * following a link: a folder a live box swapped for a symlink meanwhile gives
 * nothing, never the kind of a host file.
 */
async function lstatInStore(store: string, path: string): Promise<Stats | undefined> {
  const parts = path.split("/").filter((part) => part && part !== "." && part !== "..");
  const name = parts.pop();
  if (!name) return undefined;
  let dir = await open(store, DIR_FLAGS).catch(() => undefined);
  try {
    for (const part of parts) {
      if (!dir) return undefined;
      const next: FileHandle | undefined = await open(
        `/proc/self/fd/${dir.fd}/${part}`,
        DIR_FLAGS,
      ).catch(() => undefined);
      await dir.close();
      dir = next;
    }
    return dir ? await lstat(`/proc/self/fd/${dir.fd}/${name}`).catch(() => undefined) : undefined;
  } finally {
    await dir?.close();
  }
}

/** Names what a skipped entry is, looked at without following it. */
async function describeSkipped(store: string, skipped: Skipped[]): Promise<Skipped[]> {
  return Promise.all(
    skipped.map(async (entry) => {
      if (!entry.why.startsWith("not a file")) return entry;
      const kind = await lstatInStore(store, entry.path);
      const what = kind?.isFIFO()
        ? "a fifo"
        : kind?.isSocket()
          ? "a socket"
          : kind?.isCharacterDevice()
            ? "a character device"
            : kind?.isBlockDevice()
              ? "a block device"
              : "not a file, folder or symlink";
      return { ...entry, why: what };
    }),
  );
}

/**
 * One pass, the store lock already held: compare, and copy when anything
 * changed. Throws when rsync fails or passes its deadline (the partial copy
 * is removed).
 */
export async function snapshotLocked(
  paths: RosterPaths,
  target: StoreTarget,
  why: { reason: SnapshotReason; run?: string },
): Promise<PassResult> {
  const store = storeDir(paths, target);
  const dir = snapshotsDir(paths, target);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  // anything still called .partial is from a pass that died; we hold the lock
  for (const name of readdirSync(dir)) {
    if (name.endsWith(".partial")) await removeTree(join(dir, name));
    // a record whose folder never took its name
    else if (name.endsWith(".json") && !existsSync(join(dir, name.slice(0, -5))))
      await rm(join(dir, name), { force: true });
  }
  const newest = listSnapshots(paths, target).at(-1)?.name;
  const previous = newest ? join(dir, newest) : join(dir, ".none");
  const compared = await storeRsync(["--dry-run", "--delete"], {
    fromStore: store,
    to: `${previous}/`,
  });
  compared.skipped = await describeSkipped(store, compared.skipped);
  const changed = compared.added.length + compared.changed.length + compared.removed.length;
  if (changed === 0) return { target, snapshot: undefined, current: newest, changes: compared };

  const name = freshName(dir, newest);
  const partial = join(dir, `${name}.partial`);
  try {
    const copied = await storeRsync(newest ? [`--link-dest=${join(dir, newest)}`] : [], {
      fromStore: store,
      to: `${partial}/`,
    });
    compared.errors.push(...copied.errors);
    const meta: SnapshotMeta = {
      name,
      made_at: new Date().toISOString(),
      reason: why.reason,
      ...(why.run ? { run: why.run } : {}),
      added: compared.added.length,
      changed: compared.changed.length,
      removed: compared.removed.length,
      skipped: compared.skipped,
      paths: {
        added: compared.added.slice(0, PATHS_KEPT),
        changed: compared.changed.slice(0, PATHS_KEPT),
        removed: compared.removed.slice(0, PATHS_KEPT),
      },
    };
    await replaceFile(join(dir, `${name}.json`), `${JSON.stringify(meta, null, 2)}\n`, {
      mode: 0o600,
    });
    await rename(partial, join(dir, name));
    return { target, snapshot: meta, current: name, changes: compared };
  } catch (error) {
    await removeTree(partial);
    throw error;
  }
}

/** Keeps the newest `keep` snapshots; returns the names removed. */
export async function rotateSnapshots(
  paths: RosterPaths,
  target: StoreTarget,
  keep: number,
): Promise<string[]> {
  const dir = snapshotsDir(paths, target);
  const all = listSnapshots(paths, target);
  const gone = all.slice(0, Math.max(0, all.length - keep)).map((s) => s.name);
  for (const name of gone) {
    await removeTree(join(dir, name));
    await rm(join(dir, `${name}.json`), { force: true });
  }
  return gone;
}

/**
 * A snapshot pass as runs and the sweep take it: under the store lock
 * (waiting up to waitMs), then rotation. `keep` 0 disables the pass.
 */
export async function takeSnapshot(
  paths: RosterPaths,
  target: StoreTarget,
  options: { reason: SnapshotReason; run?: string; keep: number; waitMs: number },
): Promise<PassResult | undefined> {
  if (options.keep <= 0 || !existsSync(storeDir(paths, target))) return undefined;
  return withStoreLock(lockStoreOf(paths, target), options.waitMs, async () => {
    const result = await snapshotLocked(paths, target, {
      reason: options.reason,
      ...(options.run ? { run: options.run } : {}),
    });
    if (result.snapshot) await rotateSnapshots(paths, target, options.keep);
    return result;
  });
}

/**
 * Removes a snapshot folder. A box may have left folders without write
 * permission, which stop a plain recursive remove when we are not root: those
 * are opened up first (walked without following a symlink).
 */
export async function removeTree(dir: string): Promise<void> {
  try {
    await rm(dir, { recursive: true, force: true });
  } catch {
    await openUp(dir);
    await rm(dir, { recursive: true, force: true });
  }
}

async function openUp(dir: string): Promise<void> {
  await chmod(dir, 0o700).catch(() => undefined);
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) if (entry.isDirectory()) await openUp(join(dir, entry.name));
}
