/**
 * Lines out of a box's stream, read as hostile input: each byte is looked at
 * once (a chunk is searched for "\n" from where the last search stopped, never
 * the whole line again), and a line longer than its bound is not kept — the
 * reader says so once and reads nothing more. Split on "\n" only: U+2028 is
 * legal inside JSON strings, so no readline. Bytes are kept until their line
 * ends, so a character cut between two chunks decodes whole.
 */
export class BoxLines {
  private parts: Buffer[] = [];
  private held = 0;
  private over = false;

  constructor(
    /** The most bytes one line may hold, its "\n" not counted. */
    private readonly maxLine: number,
    private readonly onLine: (line: string) => void,
    /** Told once, with the bound, when a line outgrows it; nothing is read after. */
    private readonly onOver: (maxLine: number) => void = () => undefined,
  ) {}

  /** A line outgrew the bound: the stream is no longer read. */
  get stopped(): boolean {
    return this.over;
  }

  push(chunk: Buffer): void {
    let start = 0;
    while (!this.over && start < chunk.length) {
      const end = chunk.indexOf(0x0a, start);
      const piece = chunk.subarray(start, end === -1 ? chunk.length : end);
      if (this.held + piece.length > this.maxLine) {
        this.overflow();
        return;
      }
      if (end === -1) {
        // a copy: the caller's buffer may be reused once this returns
        this.parts.push(Buffer.from(piece));
        this.held += piece.length;
        return;
      }
      this.emit(piece);
      start = end + 1;
    }
  }

  /** The stream ended: a last line without its "\n" still counts. */
  flush(): void {
    if (!this.over && this.held > 0) this.emit(Buffer.alloc(0));
  }

  private emit(tail: Buffer): void {
    const bytes = this.held ? Buffer.concat([...this.parts, tail]) : tail;
    this.parts = [];
    this.held = 0;
    this.onLine(bytes.toString("utf8"));
  }

  private overflow(): void {
    this.over = true;
    this.parts = [];
    this.held = 0;
    this.onOver(this.maxLine);
  }
}
