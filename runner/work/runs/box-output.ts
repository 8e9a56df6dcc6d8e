import { closeSync, openSync, writeSync } from "node:fs";
import { join } from "node:path";
import { describeSize } from "../../ground/config/store-limits.ts";
import { errorMessage } from "../../ground/errors.ts";
import { BoxLines } from "./box-lines.ts";

/**
 * What the run owner reads from a box's stdout and stderr, as hostile input:
 * each stream is read once, in linear time, and bounded twice — a line of
 * pi's event stream by LINE_MAX, a whole stream by `[box] max_output`. Past
 * either bound the box is stopped (`ended_by: output`) and nothing more it
 * writes is read: one box's flood costs the host what the bound allows, and
 * no other box anything.
 *
 * An engine run keeps its streams in its folder as events.jsonl and
 * stderr.log, so each log holds at most `max_output` bytes, and one the box
 * overran ends with a line saying so. A log is written synchronously: a box
 * writing faster than the disk takes it waits for the disk, rather than
 * queueing its output in the host's memory.
 */

/** The longest line read from pi's event stream (json mode or a session's RPC): far past any event. */
export const LINE_MAX = 16 * 1024 * 1024;

export interface BoxOutputOptions {
  /** The run's folder; undefined keeps no log (a `box exec` command). */
  logDir: string | undefined;
  /** The most bytes each stream may carry over the box's life (`[box] max_output`). */
  maxBytes: number;
  /** Each of stdout's lines (an engine run): bounded by LINE_MAX. */
  onLine?: (line: string) => void;
  onStdout?: (chunk: Buffer) => void;
  onStderr?: (chunk: Buffer) => void;
  /** A sign of life, for the stall watch. */
  activity: () => void;
  /** A bound was passed: stop the box, for this reason. Told once. */
  onOver: (message: string) => void;
}

export class BoxOutput {
  private readonly out: BoundedStream;
  private readonly err: BoundedStream;
  private readonly lines: BoxLines | undefined;
  /** Why the box was stopped, once a bound was passed. */
  private overWith: string | undefined;

  constructor(private readonly options: BoxOutputOptions) {
    const { logDir, maxBytes } = options;
    const { onLine } = options;
    this.lines = onLine
      ? new BoxLines(Math.min(LINE_MAX, maxBytes), onLine, (max) =>
          this.over(`it wrote a line of over ${describeSize(max)} to its event stream`, this.out),
        )
      : undefined;
    this.out = new BoundedStream("stdout", maxBytes, logDir && join(logDir, "events.jsonl"));
    this.err = new BoundedStream("stderr", maxBytes, logDir && join(logDir, "stderr.log"));
  }

  /** Why the box must stop, once its output passed a bound. */
  get overReason(): string | undefined {
    return this.overWith;
  }

  readonly stdout = (chunk: Buffer): void => {
    if (this.overWith) return;
    this.options.activity();
    const kept = this.out.take(chunk);
    if (kept.length) {
      this.lines?.push(kept);
      this.options.onStdout?.(kept);
    }
    if (kept.length < chunk.length) this.overStream(this.out);
  };

  readonly stderr = (chunk: Buffer): void => {
    if (this.overWith) return;
    this.options.activity();
    const kept = this.err.take(chunk);
    if (kept.length) this.options.onStderr?.(kept);
    if (kept.length < chunk.length) this.overStream(this.err);
  };

  /** The box has exited: stdout's last line without its "\n" still counts. */
  flush(): void {
    if (!this.overWith) this.lines?.flush();
  }

  /** Closes the logs (the run is settling, or its start failed). */
  close(): void {
    this.out.close();
    this.err.close();
  }

  private overStream(stream: BoundedStream): void {
    this.over(
      `it wrote more than ${describeSize(this.options.maxBytes)} to its ${stream.name} ([box] max_output)`,
      stream,
    );
  }

  private over(why: string, stream: BoundedStream): void {
    if (this.overWith) return;
    this.overWith = `the box's output was stopped: ${why}`;
    stream.mark(this.overWith);
    this.options.onOver(this.overWith);
  }
}

/** One stream's count against its bound, and its log (if kept). */
class BoundedStream {
  private seen = 0;
  private fd: number | undefined;
  private failed = false;

  constructor(
    readonly name: "stdout" | "stderr",
    private readonly maxBytes: number,
    private readonly file: string | undefined,
  ) {}

  /** The part of the chunk within the bound (logged); a shorter one means the bound was passed. */
  take(chunk: Buffer): Buffer {
    const room = Math.max(0, this.maxBytes - this.seen);
    const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.seen += kept.length;
    this.write(kept);
    return kept;
  }

  /** The log's last line: why it ends here. */
  mark(reason: string): void {
    const line =
      this.name === "stdout"
        ? JSON.stringify({ type: "roster_output_stopped", reason })
        : `[roster] ${reason}`;
    this.write(Buffer.from(`\n${line}\n`));
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    this.failed = true;
  }

  private write(bytes: Buffer): void {
    if (!this.file || this.failed || !bytes.length) return;
    try {
      this.fd ??= openSync(this.file, "a", 0o644);
      for (let at = 0; at < bytes.length; ) at += writeSync(this.fd, bytes, at);
    } catch (error) {
      // a log that can't be written (a full disk) is given up, not the run: the disk watch
      // and the record say what matters, and the box's output is still bounded
      this.failed = true;
      process.stderr.write(`roster: ${this.file}: ${errorMessage(error)}; the log stops here\n`);
    }
  }
}
