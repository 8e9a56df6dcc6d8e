/**
 * Each key's share of something all keys draw on (a run's spans, a run's
 * proposals): BURST at once and RATE a second after that, a token bucket per
 * key. What is refused past a share is counted, so the key's next allowed
 * take can say how many it lost. Keys are remembered up to KEYS_KEPT at once;
 * the longest unseen is forgotten first (it starts again with a full share).
 */
const KEYS_KEPT = 4_096;

interface Share {
  tokens: number;
  at: number;
  dropped: number;
}

export class KeyedShare {
  private readonly shares = new Map<string, Share>();

  constructor(
    private readonly burst: number,
    private readonly rate: number,
    private readonly now: () => number = performance.now.bind(performance),
  ) {}

  /** Whether `key` may take one now, and how many it was refused since its last. */
  take(key: string): { allowed: boolean; dropped: number } {
    const now = this.now();
    let share = this.shares.get(key);
    if (share) this.shares.delete(key);
    else share = { tokens: this.burst, at: now, dropped: 0 };
    // kept in the order last seen: the first key is the one unseen longest
    this.shares.set(key, share);
    if (this.shares.size > KEYS_KEPT) {
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

  /** Seconds until `key` may take one again (0 when it may now). */
  waitSecs(key: string): number {
    const share = this.shares.get(key);
    if (!share) return 0;
    const tokens = share.tokens + ((this.now() - share.at) / 1000) * this.rate;
    return tokens >= 1 ? 0 : Math.ceil((1 - tokens) / this.rate);
  }
}
