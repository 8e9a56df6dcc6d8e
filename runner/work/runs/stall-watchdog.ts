import { lstat } from "node:fs/promises";
import { join } from "node:path";
import { describeWindow } from "../../ground/config/duration.ts";

/**
 * The activity watchdog: besides the wall-clock ceiling (the hard cap), a run
 * or a session turn that shows no sign of life for `[box] stall_after` is
 * stopped as stalled. Signs of life are whatever pi writes (model tokens, tool
 * starts and ends, a tool's streamed output) and the busy mark a shell tool
 * leaves with `roster-busy` while a long command runs silently.
 *
 * Cheap on a busy run: an event only stores the time; the one timer looks at
 * the latest sign when it fires and sleeps again for what is left.
 */
/** The file `roster-busy` touches in the box's $HOME; its mtime is a sign of life. */
export const BUSY_MARK = ".roster-busy";

export class StallWatchdog {
  private last = Date.now();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  /**
   * @param stallMs how long without a sign of life is a stall
   * @param homeDir the run's $HOME on the host (where the busy mark lands)
   * @param onStall called once, when a stall is found
   */
  constructor(
    private readonly stallMs: number,
    private readonly homeDir: string,
    private readonly onStall: (quietMs: number) => void,
  ) {}

  /** Starts (or restarts, after a pause) the watch from now. */
  start(): void {
    this.stopped = false;
    this.last = Date.now();
    this.arm(this.stallMs);
  }

  /** A sign of life. */
  activity(): void {
    this.last = Date.now();
  }

  /** No more watching (the run ended, or a session is between turns). */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.check(), Math.max(ms, 10));
    // a watch alone never keeps the process up
    this.timer.unref();
  }

  private async check(): Promise<void> {
    this.timer = undefined;
    const mark = await this.busyMark();
    if (this.stopped) return;
    const latest = Math.max(this.last, mark);
    const left = latest + this.stallMs - Date.now();
    if (left > 0) {
      this.arm(left);
      return;
    }
    this.stopped = true;
    this.onStall(Date.now() - latest);
  }

  /** When the box last marked itself busy (0: never). lstat: a symlink there is not followed. */
  private async busyMark(): Promise<number> {
    try {
      const stat = await lstat(join(this.homeDir, BUSY_MARK));
      // the box shares this host's clock: a mark dated ahead of it was set by hand, not
      // touched, and would hold the watch off for good; it counts for nothing
      return stat.isFile() && stat.mtimeMs <= Date.now() + 1000 ? stat.mtimeMs : 0;
    } catch {
      return 0;
    }
  }
}

/** What the record, the log and a chat sender are told. */
export function stallMessage(stallMs: number): string {
  return `stopped as stalled: no model output, tool start or end, or tool output for ${describeWindow(stallMs)} ([box] stall_after; a long silent command can run under roster-busy)`;
}
