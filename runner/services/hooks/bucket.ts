/**
 * How many deliveries a hook files: a token bucket of `perMinute` tokens,
 * refilled evenly over the minute, so a burst of that many is taken at once
 * and then one every 60/perMinute seconds. A delivery with no token is
 * answered 429 with the seconds until the next one (Retry-After), and files
 * nothing.
 */
export class TokenBucket {
  private tokens: number;
  private at: number;

  constructor(
    private readonly perMinute: number,
    now: number = Date.now(),
  ) {
    this.tokens = perMinute;
    this.at = now;
  }

  /** Takes a token: undefined when there was one, else the whole seconds until there is. */
  take(now: number = Date.now()): number | undefined {
    const perMs = this.perMinute / 60_000;
    this.tokens = Math.min(this.perMinute, this.tokens + (now - this.at) * perMs);
    this.at = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return undefined;
    }
    return Math.max(1, Math.ceil((1 - this.tokens) / perMs / 1000));
  }
}
