import { existsSync, readFileSync } from "node:fs";
import type { LogPlace } from "../../ground/files/appended-lines.ts";
import { replaceFileSync } from "../../ground/files/atomic-replace.ts";
import { readAppendedAcross } from "../../ground/files/rotation/read-across.ts";

/**
 * What the console's running summaries share: sums kept beside an
 * append-only log, with the place read up to (files/appended-lines.ts), so
 * each refresh reads only what was appended. A log rotated since is followed
 * into its rotated file (files/rotation/read-across.ts): each line counted
 * once, whichever file it is in. A log that is a new one is summed again
 * from its start (its rotated files first); what is too old is pruned; the sums are saved
 * for the next process whenever anything was read, and sums that can't be
 * read back are summed again from the log.
 */
export abstract class LogSummary<T extends LogPlace> {
  protected data: T;

  constructor(
    private readonly log: string,
    /** Where the sums are kept between processes (under state/). */
    private readonly file: string,
  ) {
    this.data = this.loaded() ?? this.empty();
  }

  /** Adds what was appended since the last refresh; returns how many bytes of the live file it read. */
  refresh(now = Date.now()): number {
    const before = this.data.offset;
    const beforeIno = this.data.ino;
    let restarted = false;
    const place = readAppendedAcross(this.log, this.data, {
      restart: () => {
        restarted = true;
        this.data = this.empty();
      },
      line: (line, at) => this.add(line, at),
    });
    // the live file is another one: offsets kept from the old one point into no live file
    const moved =
      !restarted &&
      beforeIno !== 0 &&
      (place.ino !== beforeIno || (this.data.last !== undefined && place.last !== this.data.last));
    if (moved) this.rotated();
    const rotatedBefore = this.data.last;
    this.data.ino = place.ino;
    this.data.offset = place.offset;
    if (place.last !== undefined) this.data.last = place.last;
    this.prune(now);
    if (restarted || moved || rotatedBefore !== this.data.last || this.data.offset !== before)
      replaceFileSync(this.file, JSON.stringify(this.data));
    return restarted || moved ? this.data.offset : this.data.offset - before;
  }

  protected abstract empty(): T;
  /**
   * The log was rotated and followed into its new live file: a byte offset
   * kept from before is into the old file, no place in the live one. (Those
   * read in this refresh are let go too: which file a line came from is
   * not told apart, and a reader that has no offset reads across the files.)
   */
  protected rotated(): void {}
  /** One whole line of the log, and the byte offset it starts at (ROTATED_OFFSET when in a rotated file). */
  protected abstract add(line: string, at: number): void;
  protected abstract prune(now: number): void;
  /** The saved sums as this version keeps them, or undefined to sum again. */
  protected abstract revive(saved: Partial<T>): T | undefined;

  private loaded(): T | undefined {
    if (!existsSync(this.file)) return undefined;
    try {
      const saved = JSON.parse(readFileSync(this.file, "utf8")) as Partial<T>;
      if (typeof saved.offset !== "number" || typeof saved.ino !== "number") return undefined;
      return this.revive(saved);
    } catch {
      return undefined;
    }
  }
}
