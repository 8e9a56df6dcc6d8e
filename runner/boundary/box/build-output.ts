import type { OnMessage } from "./engine.ts";
import type { Progress } from "./progress.ts";

/**
 * Follows a classic-builder build to its end: each `Step n/m` becomes a
 * progress step (prefixed, shortened), every other line a detail. Resolves
 * with the build's error, if it reported one, and every line it printed, so
 * the caller can say what failed in its own words. The builder colours a
 * step's stderr and may split one line over several messages ("E", ": ",
 * "Unable to locate package x"): colour codes are dropped and lines are
 * joined again before anyone reads them.
 */
// SGR colour sequences only: the builder adds nothing else (built from a string:
// a literal ESC in a regex reads as a mistake)
const COLOUR = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");

export interface BuildReader {
  /** Hand this to the engine's build: it reads each message as it comes. */
  onMessage: OnMessage;
  /** Once the build's stream ended: its error, if it reported one, and every line. */
  finish(): { failure: string | undefined; output: string[] };
}

export function buildReader(progress: Progress, prefix: string): BuildReader {
  let failure: string | undefined;
  const output: string[] = [];
  let pending = "";
  const line = (raw: string) => {
    const text = raw.trimEnd();
    if (!text) return;
    output.push(text);
    // Docker's classic builder says "Step 2/9 : …", Podman's "[2/2] STEP 7/8: …"
    if (/^(Step \d+\/\d+ :|(\[\d+\/\d+\] )?STEP \d+\/\d+:)/.test(text))
      progress.step(`${prefix}: ${truncate(text, 110)}`);
    else progress.detail(text);
  };
  return {
    onMessage: (message) => {
      if (message.error) {
        failure = message.errorDetail?.message ?? message.error;
        return;
      }
      const lines = (pending + (message.stream ?? "").replace(COLOUR, "")).split("\n");
      pending = lines.pop() ?? "";
      for (const text of lines) line(text);
    },
    finish: () => {
      line(pending);
      pending = "";
      return { failure, output };
    },
  };
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
