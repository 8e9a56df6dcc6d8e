import { statfs } from "node:fs/promises";
import { describeSize, type StoreLimits } from "../../ground/config/store-limits.ts";
import { measureDisk, WALK_UP_TO } from "../../ground/files/disk-usage.ts";
import type { DurableFolder } from "../home/build-home.ts";

/**
 * What a box may take of the host's disk while it runs: each folder it
 * writes that outlives it (its store, a session's channel store, its $HOME
 * and repo clones) is measured as `du` measures it (on-disk blocks, so a
 * sparse file counts what it really holds; symlinks never followed; one
 * filesystem; counted in this process while the folders are small, by `du`
 * from the first look they are not: files/disk-usage.ts) every moment, and
 * the box is stopped the first time one is over its limit
 * (`[store] max_size`, `[store] home_max_size`); and when the data
 * filesystem's free share falls under `[store] reserve`, a box whose folders
 * grew since the last look is stopped too — the one filling the disk, while
 * boxes that aren't writing go on. A look costs what it costs: the next one
 * waits at least five times as long as the last took, so a 100,000-file store
 * is never measured back to back; and while nothing grows the looks slow down
 * (to DISK_QUIET_MS), back to every DISK_LOOK_MS the moment something does.
 * A folder growing fast is looked at sooner: at half the time it would take,
 * at the rate it grew, to reach its limit or the reserve (down to
 * DISK_FAST_MS), so a box writing at disk speed is caught close to the bound
 * rather than one whole interval past it. Polling still overshoots by what the
 * box writes between two looks and while it is being killed: docs/store.md
 * says how much.
 */
export const DISK_LOOK_MS = 500;
/** A quiet box is looked at less often, down to this: an idle session costs next to nothing. */
export const DISK_QUIET_MS = 1_000;
/** The soonest a look follows another, for a folder about to reach a bound. */
export const DISK_FAST_MS = 50;

export interface DiskWatchOptions {
  folders: DurableFolder[];
  limits: StoreLimits;
  /** Called once, with the reason, when the box must stop. */
  onOver: (message: string) => void;
  everyMs?: number;
}

export class DiskWatch {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private previous: number[] | undefined;
  private delayMs = DISK_LOOK_MS;
  /** When `previous` was measured: growth over this time is the folder's rate. */
  private previousAt = 0;
  /** Counted in this process while the folders stay small; by `du` from the first look they don't. */
  private walkUpTo = WALK_UP_TO;

  constructor(private readonly options: DiskWatchOptions) {}

  async start(): Promise<void> {
    this.previousAt = Date.now();
    this.previous = await this.measure();
    // the first look comes at once: a box may write at disk speed from its first moment,
    // and from there the looks slow down only while nothing grows
    this.delayMs = DISK_FAST_MS;
    this.schedule(DISK_FAST_MS);
  }

  /** Bytes on disk of each folder, those measured with it included: one count for all. */
  private async measure(): Promise<number[]> {
    const { folders } = this.options;
    const paths = folders.flatMap((folder) => [folder.path, ...(folder.with ?? [])]);
    const { sizes, by } = await measureDisk(paths, this.walkUpTo);
    if (by === "du") this.walkUpTo = 0;
    let at = 0;
    return folders.map((folder) => {
      const count = 1 + (folder.with?.length ?? 0);
      const total = sizes.slice(at, at + count).reduce((sum, size) => sum + size, 0);
      at += count;
      return total;
    });
  }

  private limitOf(folder: DurableFolder): { bytes: number; setting: string } {
    return folder.limit ?? { bytes: this.options.limits.maxBytes, setting: "[store] max_size" };
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.look(), delayMs);
    this.timer.unref();
  }

  private async look(): Promise<void> {
    const began = Date.now();
    const { folders, limits } = this.options;
    const sizes = await this.measure();
    if (this.stopped) return;
    const over = folders.findIndex(
      (folder, index) => (sizes[index] ?? 0) > this.limitOf(folder).bytes,
    );
    const full = folders[over];
    if (full) return this.over(this.overLimit(full, sizes[over] ?? 0));
    const elapsedMs = Math.max(1, began - this.previousAt);
    const growth = folders.map((_, index) => (sizes[index] ?? 0) - (this.previous?.[index] ?? 0));
    this.previous = sizes;
    this.previousAt = began;
    // how soon, at the rate it grew, a growing folder could reach a bound
    let soonestMs = Number.POSITIVE_INFINITY;
    for (const [index, folder] of folders.entries()) {
      const grown = growth[index] ?? 0;
      if (grown <= 0) continue;
      const rate = grown / elapsedMs;
      soonestMs = Math.min(soonestMs, (this.limitOf(folder).bytes - (sizes[index] ?? 0)) / rate);
      // the filesystem the growing folder is on: the data filesystem, unless a store is mounted apart
      const disk = await statfs(folder.path).catch(() => undefined);
      if (!disk || disk.blocks <= 0) continue;
      const free = disk.bavail / disk.blocks;
      if (free < limits.reserve)
        return this.over(
          `${folder.filesystem ?? "the data filesystem"} is down to ${(free * 100).toFixed(1)}% free, under the ${(limits.reserve * 100).toFixed(0)}% kept for every worker ([store] reserve), and this box was writing to it`,
        );
      const aboveReserve = (disk.bavail - limits.reserve * disk.blocks) * disk.bsize;
      soonestMs = Math.min(soonestMs, aboveReserve / rate);
    }
    const base = this.options.everyMs ?? DISK_LOOK_MS;
    this.delayMs = Number.isFinite(soonestMs)
      ? Math.max(DISK_FAST_MS, Math.min(base, Math.round(soonestMs / 2)))
      : Math.min(DISK_QUIET_MS, Math.round(this.delayMs * 1.5));
    this.schedule(Math.max(this.delayMs, 5 * (Date.now() - began)));
  }

  private overLimit(folder: DurableFolder, size: number): string {
    const limit = this.limitOf(folder);
    const verb = folder.with?.length ? "hold" : "holds";
    return `${folder.what} ${verb} ${describeSize(size)} on disk, over its ${describeSize(limit.bytes)} limit (${limit.setting})`;
  }

  private over(message: string): void {
    this.stop();
    this.options.onOver(message);
  }
}
