/**
 * Each run's share of a process's spans. A process keeps one queue of spans
 * for its collector (8,192; past that the SDK drops what comes), and a box
 * chooses how many door requests, tool events and proposals its run makes: a
 * box sending thousands of requests a second would fill the queue, and every
 * other run's spans would be the ones lost. So each run may start BURST spans
 * at once and RATE a second after that; past its share its spans are not made,
 * and they are counted, so the run's next span says how many it lost
 * (`roster.spans_dropped`).
 */
export const SPAN_BURST = 2_000;
export const SPAN_RATE = 100;
/** Runs remembered at once; the longest unseen is forgotten first (it starts again with a full share). */
const RUNS_KEPT = 4_096;

interface Share {
  tokens: number;
  at: number;
  dropped: number;
}

export class SpanBudget {
  private readonly shares = new Map<string, Share>();

  constructor(
    private readonly burst = SPAN_BURST,
    private readonly rate = SPAN_RATE,
    private readonly now: () => number = performance.now.bind(performance),
  ) {}

  /** Whether `runId` may start a span now, and how many it lost since its last one. */
  take(runId: string): { allowed: boolean; dropped: number } {
    const now = this.now();
    let share = this.shares.get(runId);
    if (share) this.shares.delete(runId);
    else share = { tokens: this.burst, at: now, dropped: 0 };
    // kept in the order last seen: the first key is the run unseen longest
    this.shares.set(runId, share);
    if (this.shares.size > RUNS_KEPT) {
      const oldest = this.shares.keys().next().value;
      if (oldest !== undefined) this.shares.delete(oldest);
    }
    share.tokens = Math.min(this.burst, share.tokens + ((now - share.at) / 1000) * this.rate);
    share.at = now;
    if (share.tokens < 1) {
      share.dropped++;
      return { allowed: false, dropped: share.dropped };
    }
    share.tokens--;
    const dropped = share.dropped;
    share.dropped = 0;
    return { allowed: true, dropped };
  }
}
