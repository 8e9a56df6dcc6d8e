import { describeSize, type StoreLimits } from "../config/store-limits.ts";
import { diskUsage, freeShare } from "../files/disk-usage.ts";
import type { DurableFolder } from "../home/build-home.ts";

/**
 * What a box may take of the host's disk while it runs: each folder it
 * writes that outlives it (its store, a session's channel store, its $HOME
 * and repo clones) is measured with `du` (on-disk blocks, so a sparse file
 * counts what it really holds; symlinks never followed; one filesystem) every
 * moment, and the box is stopped the first time one is over its limit
 * (`[store] max_size`, `[store] home_max_size`); and when the data
 * filesystem's free share falls under `[store] reserve`, a box whose folders
 * grew since the last look is stopped too — the one filling the disk, while
 * boxes that aren't writing go on. A look costs what `du` costs: the next one
 * waits at least five times as long as the last took, so a 100,000-file store
 * is never measured back to back; and while nothing grows the looks slow down
 * (to DISK_QUIET_MS), back to every DISK_LOOK_MS the moment something does.
 */
export const DISK_LOOK_MS = 500;
/** A quiet box is looked at less often, down to this: an idle session costs next to nothing. */
export const DISK_QUIET_MS = 2_000;

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

  constructor(private readonly options: DiskWatchOptions) {}

  async start(): Promise<void> {
    this.previous = await this.measure();
    this.schedule(this.options.everyMs ?? DISK_LOOK_MS);
  }

  /** Bytes on disk of each folder, those measured with it included: one `du` for all. */
  private async measure(): Promise<number[]> {
    const { folders } = this.options;
    const paths = folders.flatMap((folder) => [folder.path, ...(folder.with ?? [])]);
    const sizes = await diskUsage(paths);
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
    const grew = folders.filter((_, index) => (sizes[index] ?? 0) > (this.previous?.[index] ?? 0));
    this.previous = sizes;
    for (const folder of grew) {
      // the filesystem the growing folder is on: the data filesystem, unless a store is mounted apart
      const free = await freeShare(folder.path).catch(() => 1);
      if (free < limits.reserve)
        return this.over(
          `${folder.filesystem ?? "the data filesystem"} is down to ${(free * 100).toFixed(1)}% free, under the ${(limits.reserve * 100).toFixed(0)}% kept for every worker ([store] reserve), and this box was writing to it`,
        );
    }
    const base = this.options.everyMs ?? DISK_LOOK_MS;
    this.delayMs = grew.length ? base : Math.min(DISK_QUIET_MS, Math.round(this.delayMs * 1.5));
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
