import { fullCollection } from "./full-collection.ts";

/**
 * Request bodies held in memory for judging (an MCP call's JSON, an action's
 * request), bounded per box and overall, so that no box — nor all of them at
 * once — can make the gateway hold more than these bounds. A body no rule
 * reads is never held: it streams through (exchange.ts). Past a bound the
 * request is refused with a legible 503 (refusal.ts), never queued, and
 * the bytes come back the moment each exchange is done with them.
 */
export type BodyBound = "box" | "overall";

/**
 * Held bytes after which, once nothing is held any more, the gateway asks V8
 * for a full collection: large bodies live outside its heap, and an idle
 * gateway would otherwise keep them (and their pages) until its next
 * collection, which nothing may prompt for a long while.
 */
const COLLECT_AFTER_BYTES = 32 * 1024 * 1024;
const COLLECT_DELAY_MS = 1000;

export class BodyBudget {
  private total = 0;
  private readonly byBox = new Map<string, number>();
  /** Bytes taken since the last collection. */
  private taken = 0;
  private collecting: NodeJS.Timeout | undefined;

  constructor(
    /** Most bytes one box (run) may have held at once. */
    readonly perBox: number,
    /** Most bytes all boxes together may have held at once. */
    readonly overall: number,
  ) {}

  /** Takes `bytes` for `box`; or names the bound they would cross, and takes nothing. */
  take(box: string, bytes: number): BodyBound | undefined {
    const held = this.byBox.get(box) ?? 0;
    if (held + bytes > this.perBox) return "box";
    if (this.total + bytes > this.overall) return "overall";
    this.byBox.set(box, held + bytes);
    this.total += bytes;
    this.taken += bytes;
    return undefined;
  }

  give(box: string, bytes: number): void {
    if (bytes <= 0) return;
    const held = (this.byBox.get(box) ?? 0) - bytes;
    if (held > 0) this.byBox.set(box, held);
    else this.byBox.delete(box);
    this.total = Math.max(0, this.total - bytes);
    if (this.total === 0 && this.taken >= COLLECT_AFTER_BYTES) this.collectSoon();
  }

  /** A full collection a moment after a burst has ended (full-collection.ts). */
  private collectSoon(): void {
    if (this.collecting) return;
    this.collecting = setTimeout(() => {
      this.collecting = undefined;
      if (this.total > 0) return;
      this.taken = 0;
      fullCollection();
    }, COLLECT_DELAY_MS);
    this.collecting.unref();
  }

  /** Bytes held now, for one box or for all. */
  held(box?: string): number {
    return box === undefined ? this.total : (this.byBox.get(box) ?? 0);
  }
}

/**
 * The bounds for a body limit: a box may have two of the largest bodies held
 * at once, all boxes together four (256 MiB with the default 64 MiB limit).
 */
export function bodyBudgetFor(maxBodyBytes: number, shards = 1): BodyBudget {
  // shards (process/shards.ts) split the overall bound, each keeping room for one box's
  const perBox = 2 * maxBodyBytes;
  return new BodyBudget(perBox, Math.max(perBox, Math.ceil((4 * maxBodyBytes) / shards)));
}
