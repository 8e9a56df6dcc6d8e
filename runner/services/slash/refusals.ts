/**
 * What a refused command leaves in the audit log, bounded. Anyone who can
 * reach a bot can give it commands, and every refusal is a line in the
 * audit log: without a bound a stranger could grow it by a full command's
 * arguments (8,000 characters) per try, as fast as they can type. So a
 * refused command keeps only a short excerpt of its arguments, and each
 * asker's refusals are written at most REFUSALS_WRITTEN per REFUSAL_WINDOW_MS;
 * past that they are still refused (and answered), and the next line written
 * for that asker says how many were left out.
 */

/** Characters of each argument a refusal's line keeps. */
export const REFUSED_ARG_CHARS = 64;
/** Characters of all a refusal's arguments together, keys included. */
export const REFUSED_ARGS_CHARS = 256;
/** Refusals written per asker in one window. */
export const REFUSALS_WRITTEN = 5;
/** The window, a minute. */
export const REFUSAL_WINDOW_MS = 60_000;
/** Askers remembered at once; past it the oldest window is forgotten (its count starts over). */
const ASKERS_KEPT = 2_000;

/** A refused command's arguments cut to an excerpt: each value and the whole bounded. */
export function refusedArgs(args: Record<string, string>): Record<string, string> {
  const kept: Record<string, string> = {};
  let left = REFUSED_ARGS_CHARS;
  for (const [key, value] of Object.entries(args)) {
    const name = key.slice(0, 32);
    const room = Math.min(REFUSED_ARG_CHARS, left - name.length);
    if (room <= 0) break;
    const cut = value.length > room ? `${value.slice(0, Math.max(0, room - 1))}…` : value;
    kept[name] = cut;
    left -= name.length + cut.length;
  }
  return kept;
}

interface Window {
  started: number;
  written: number;
  /** Refusals in windows past that were not written. */
  unwritten: number;
}

/** Per asker: whether this refusal is written, and how many before it were not. */
export class RefusalBound {
  private readonly askers = new Map<string, Window>();

  constructor(private readonly now: () => number = Date.now) {}

  /** undefined: not written; else the count of refusals left out before this one. */
  admit(asker: string): { leftOut: number } | undefined {
    const at = this.now();
    let window = this.askers.get(asker);
    if (window && at - window.started >= REFUSAL_WINDOW_MS) {
      window = { started: at, written: 0, unwritten: window.unwritten };
      this.askers.delete(asker);
    }
    if (!window) {
      this.forgetOldest();
      window = { started: at, written: 0, unwritten: 0 };
    }
    this.askers.set(asker, window);
    if (window.written >= REFUSALS_WRITTEN) {
      window.unwritten++;
      return undefined;
    }
    window.written++;
    const leftOut = window.unwritten;
    window.unwritten = 0;
    return { leftOut };
  }

  private forgetOldest(): void {
    while (this.askers.size >= ASKERS_KEPT) {
      const oldest = this.askers.keys().next();
      if (oldest.done) return;
      this.askers.delete(oldest.value);
    }
  }
}

/** The server's one bound: a process answers commands for every worker and surface. */
export const refusals = new RefusalBound();
