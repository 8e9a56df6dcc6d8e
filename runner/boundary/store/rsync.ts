import { spawn } from "node:child_process";
import { RosterError } from "../../ground/errors.ts";
import { confineToStore } from "./confine.ts";

/**
 * rsync as the host runs it over a store (a snapshot, a comparison, a
 * restore), and its itemized output read back as added / changed / removed /
 * skipped. The options are the store's safety, so they live here once:
 *
 * - `-rlpt` (and `-go`, which only root can honour): folders, files, modes
 *   and times; symlinks are copied as links (`-l`), never followed, so a link
 *   a box planted to /etc/shadow or the vault stays a link and nothing it
 *   points at is opened.
 * - no `-D`: devices, fifos and sockets are skipped (rsync names each one);
 *   nothing ever opens a fifo to block on or a device to read forever.
 * - `--max-size`: a file over STORE_SNAPSHOT_FILE_MAX is skipped and named, so
 *   a 10 GB sparse file neither fills the disk nor takes the pass's time;
 *   `--sparse` keeps the holes of smaller sparse files.
 * - `/.locks` is never copied nor deleted: it is where boxes take their locks.
 * - the store's side runs chrooted into the store (confine.ts): a folder a
 *   live box swaps for a symlink mid-pass can't lead it to a host file or
 *   let it write outside the store.
 * - a deadline: the whole rsync process group is killed when it passes.
 */
export const STORE_SNAPSHOT_FILE_MAX = 1024 ** 3;
export const STORE_PASS_DEADLINE_MS = 10 * 60_000;

export const STORE_RSYNC_OPTIONS = [
  "-rlpt",
  ...(process.getuid?.() === 0 ? ["-go"] : []),
  // a box's uids are numbers: never mapped through a name
  "--numeric-ids",
  // whole files, as a local copy always was: no delta against a basis file a
  // box can swap away between its checksums and its reading (which rsync
  // calls a protocol error), and no checksum work on either side
  "--whole-file",
  "--sparse",
  // times compared to the nanosecond: a file rewritten at its old size within
  // the same second as the snapshot before is still seen as changed
  "--modify-window=-1",
  `--max-size=${STORE_SNAPSHOT_FILE_MAX}`,
  "--exclude=/.locks",
  "--itemize-changes",
  "--info=skip2,nonreg",
];

export interface Skipped {
  path: string;
  why: string;
}

/** What one pass said, line by line, in the store's own relative paths. */
export interface Itemized {
  added: string[];
  changed: string[];
  removed: string[];
  skipped: Skipped[];
  /** rsync's complaints (an unreadable file, one that vanished): the pass went on without it. */
  errors: string[];
}

const ITEM = /^([<>ch.])([fdLDS])(\S{9}) (.+)$/;
const NONREGULAR = /^skipping non-regular file "(.+)"$/;
const OVERSIZE = /^(.+) is over max-size$/;
const DELETING = /^\*deleting +(.+)$/;

export function parseItemized(stdout: string, stderr: string): Itemized {
  const out: Itemized = { added: [], changed: [], removed: [], skipped: [], errors: [] };
  for (const line of stdout.split("\n")) {
    const item = ITEM.exec(line);
    if (item) {
      const [, update = "", type = "", flags = "", path = ""] = item;
      if (path === "./") continue;
      if (flags === "+++++++++") out.added.push(path);
      // a folder whose time changed only says something changed inside it
      else if (type !== "d" && update !== ".") out.changed.push(path);
      else if (type !== "d" && /[^.]/.test(flags)) out.changed.push(path);
      continue;
    }
    const nonRegular = NONREGULAR.exec(line);
    if (nonRegular?.[1]) {
      out.skipped.push({ path: nonRegular[1], why: "not a file, folder or symlink" });
      continue;
    }
    const oversize = OVERSIZE.exec(line);
    if (oversize?.[1]) {
      out.skipped.push({
        path: oversize[1],
        why: `over the ${STORE_SNAPSHOT_FILE_MAX / 1024 ** 3} GiB per-file cap`,
      });
      continue;
    }
    const deleting = DELETING.exec(line);
    if (deleting?.[1]) out.removed.push(deleting[1]);
  }
  for (const line of stderr.split("\n")) {
    // the summary line repeats what the lines before it said
    if (line.trim() && !line.startsWith("rsync error: some files")) out.errors.push(line.trim());
  }
  return out;
}

export interface RsyncResult extends Itemized {
  code: number;
}

/** Exit codes after which the pass is whole but for the files it named (23 partial, 24 vanished). */
const COMPLETE = new Set([0, 23, 24]);

/** One copy between a store and a host folder: which end is the store. */
export type Transfer = { from: string; toStore: string } | { fromStore: string; to: string };

/**
 * Runs rsync with the store options and `args` over `transfer`, the store's
 * end confined to the store; resolves with what it did, rejects when it
 * failed or outlived `deadlineMs` (its process group killed).
 */
export async function storeRsync(
  args: string[],
  transfer: Transfer,
  deadlineMs = STORE_PASS_DEADLINE_MS,
): Promise<RsyncResult> {
  const store = "toStore" in transfer ? transfer.toStore : transfer.fromStore;
  const confined = await confineToStore(store, "toStore" in transfer ? "write" : "read");
  try {
    const ends =
      "toStore" in transfer ? [transfer.from, confined.address] : [confined.address, transfer.to];
    return await runRsync([...args, ...confined.args, ...ends], deadlineMs);
  } finally {
    await confined.dispose();
  }
}

function runRsync(args: string[], deadlineMs: number): Promise<RsyncResult> {
  return new Promise((resolve, reject) => {
    const child = spawn("rsync", [...STORE_RSYNC_OPTIONS, ...args], {
      stdio: ["ignore", "pipe", "pipe"],
      // its own group, so the deadline kills rsync's receiver and generator too
      detached: true,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LC_ALL: "C" },
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk));
    let late = false;
    const timer = setTimeout(() => {
      late = true;
      if (child.pid) {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          // gone already
        }
      }
    }, deadlineMs);
    child.on("error", (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(
        error.code === "ENOENT"
          ? new RosterError(
              "rsync is not installed: store snapshots need it (Debian: apt-get install rsync)",
            )
          : error,
      );
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      const out = Buffer.concat(stdout).toString("utf8");
      const err = Buffer.concat(stderr).toString("utf8");
      if (late) {
        reject(new RosterError(`rsync passed its ${Math.round(deadlineMs / 1000)} s deadline`));
        return;
      }
      if (code === null || !COMPLETE.has(code)) {
        const last = err.trim().split("\n").slice(-2).join(" / ");
        reject(new RosterError(`rsync failed (exit ${code ?? "by signal"}): ${last}`));
        return;
      }
      resolve({ code, ...parseItemized(out, err) });
    });
  });
}
