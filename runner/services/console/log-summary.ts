import { existsSync, readFileSync } from "node:fs";
import { type LogPlace, readAppended } from "../../ground/files/appended-lines.ts";
import { replaceFileSync } from "../../ground/files/atomic-replace.ts";

/**
 * What the console's running summaries share: sums kept beside an
 * append-only log, with the place read up to (files/appended-lines.ts), so
 * each refresh reads only what was appended. A log that is a new one is
 * summed again from its start; what is too old is pruned; the sums are saved
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

  /** Adds what was appended since the last refresh; returns how many bytes it read. */
  refresh(now = Date.now()): number {
    const before = this.data.offset;
    let restarted = false;
    const place = readAppended(this.log, this.data, {
      restart: () => {
        restarted = true;
        this.data = this.empty();
      },
      line: (line, at) => this.add(line, at),
    });
    this.data.ino = place.ino;
    this.data.offset = place.offset;
    this.prune(now);
    if (restarted || this.data.offset !== before)
      replaceFileSync(this.file, JSON.stringify(this.data));
    return restarted ? this.data.offset : this.data.offset - before;
  }

  protected abstract empty(): T;
  /** One whole line of the log, and the byte offset it starts at. */
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
