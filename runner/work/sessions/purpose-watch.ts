import type { RosterPaths } from "../../ground/config/paths.ts";
import { cutPurpose, purposeTurnBlock, readPurpose } from "../prompt/purpose.ts";

/**
 * A warm session's system prompt is fixed when pi starts, but its channel's
 * purpose can change while it runs (a purpose edit approved mid-session).
 * The watch remembers the purpose the worker was last given — by the system
 * prompt, then by a turn — and puts the new one at the head of the next
 * turn's input, only when it changed.
 */
export class PurposeWatch {
  constructor(
    private readonly paths: RosterPaths,
    private readonly channel: string,
    /** The purpose.md the session's system prompt was compiled with, as read. */
    private given: string | undefined,
    private readonly maxChars: number,
  ) {}

  /** The turn's input, with the purpose block at its head when the purpose changed. */
  turnInput(input: string): string {
    const now = readPurpose(this.paths, this.channel);
    if (now === this.given) return input;
    this.given = now;
    const shown = now === undefined ? undefined : cutPurpose(now, this.maxChars) || undefined;
    return `${purposeTurnBlock(this.channel, shown)}\n${input}`;
  }
}
