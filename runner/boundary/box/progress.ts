/**
 * Progress for long operations (image builds, base builds): which step, how long
 * so far. Human output goes to stderr so stdout stays clean for `--json`.
 */
export interface Progress {
  /** A new phase or build step began. */
  step(label: string): void;
  /** A line of detail (build output); shown only when verbose. */
  detail(line: string): void;
  /** Something the user should know even when not verbose. */
  note(line: string): void;
}

export function elapsedLabel(startedAt: number, now = Date.now()): string {
  const seconds = (now - startedAt) / 1000;
  if (seconds < 60) return `${seconds.toFixed(1).padStart(5)}s`;
  const minutes = Math.floor(seconds / 60);
  return `${String(minutes).padStart(2)}m${String(Math.floor(seconds % 60)).padStart(2, "0")}s`;
}

export function consoleProgress(
  options: { verbose?: boolean; write?: (text: string) => void } = {},
): Progress {
  const startedAt = Date.now();
  const write = options.write ?? ((text: string) => process.stderr.write(text));
  const stamp = () => `[${elapsedLabel(startedAt)}]`;
  return {
    step: (label) => write(`${stamp()} ${label}\n`),
    detail: (line) => {
      if (options.verbose) write(`${" ".repeat(stamp().length)} ${line}\n`);
    },
    note: (line) => write(`${stamp()} ${line}\n`),
  };
}

/** Progress that records nothing: for callers that only want the result. */
export const silentProgress: Progress = { step() {}, detail() {}, note() {} };
