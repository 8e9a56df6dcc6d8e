/**
 * A label whose values a box can't multiply: the first `cap` distinct values
 * are kept as they are (cut to `maxChars`), and every later new one is
 * counted as "other". Worker and rule names come from config and stay far
 * below the cap; the bound is there for the day one doesn't.
 */
export class BoundedLabel {
  private readonly seen = new Set<string>();

  constructor(
    private readonly cap = 200,
    private readonly maxChars = 64,
  ) {}

  of(value: string | null | undefined): string {
    const text = (value ?? "").slice(0, this.maxChars) || "none";
    if (this.seen.has(text)) return text;
    if (this.seen.size >= this.cap) return "other";
    this.seen.add(text);
    return text;
  }
}
