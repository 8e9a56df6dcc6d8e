import { closeSync, fstatSync, openSync, statSync, writeSync } from "node:fs";

/**
 * An append-only file kept open by a writer that writes often (the door's
 * audit log: a line per request, where opening the file each time would
 * cost a syscall pair per request), which still follows the path when the
 * file is rotated (renamed aside) or removed: at most every `checkMs` the
 * path's inode is compared with the open file's, and a new one is opened.
 * A line written in between lands whole in the rotated file, which is not
 * compressed until well after (rotation/rotate.ts SETTLE_MS).
 */
export class FollowingAppender {
  private fd: number | undefined;
  private ino = 0;
  private checkedAt = 0;

  constructor(
    readonly file: string,
    private readonly mode = 0o600,
    private readonly checkMs = 1000,
  ) {
    this.open();
  }

  private open(): void {
    const fd = openSync(this.file, "a", this.mode);
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = fd;
    this.ino = fstatSync(fd).ino;
    this.checkedAt = Date.now();
  }

  /** One write() of the whole text on an O_APPEND descriptor. */
  write(text: string): void {
    if (this.fd === undefined) return;
    const now = Date.now();
    if (now - this.checkedAt >= this.checkMs) {
      this.checkedAt = now;
      if (statSync(this.file, { throwIfNoEntry: false })?.ino !== this.ino) this.open();
    }
    writeSync(this.fd, text);
  }

  get closed(): boolean {
    return this.fd === undefined;
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}
