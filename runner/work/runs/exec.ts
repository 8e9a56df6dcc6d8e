import type { RosterPaths } from "../../ground/config/paths.ts";
import { errorMessage } from "../../ground/errors.ts";
import type { AheadClones } from "../repos/clone.ts";
import type { ExecEnvelope } from "./exec-envelope.ts";
import { failedRunId, Run } from "./run.ts";
import type { ReadyStart } from "./run-request.ts";

/**
 * `roster box exec <worker> -- <command>`: one command in a fresh box of the
 * worker — its mounts, its lockdown, its gateway, no model and no engine —
 * answered by one JSON envelope a script can trust. The run owner (run.ts)
 * starts, limits and settles it as it does every run; only the command and
 * the envelope are this file's. The exit code is the one the process gave: a
 * signal is named only when roster knows why it came (its own timeout, the
 * kernel's OOM killer), and no answer without an exit code is ever "ok".
 */
export interface ExecOptions {
  paths: RosterPaths;
  worker: string;
  command: string;
  timeoutSecs: number;
  note: (text: string) => void;
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
  /** Takes a server's ready box for the worker's commands, if it has one (docs/ready-boxes.md). */
  takeReady?: (worker: string) => Promise<ReadyStart | undefined>;
  /** A server's clones made ahead of their runs (repos/spare-clones.ts). */
  spares?: AheadClones;
}

/** Each stream's cap: enough for any honest answer, never a host's memory. */
export const OUTPUT_CAP = 100 * 1024;

/** Keeps the first OUTPUT_CAP bytes of a stream and counts the rest. */
class CappedOutput {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  private dropped = 0;

  push(chunk: Buffer): void {
    const room = OUTPUT_CAP - this.kept;
    if (room > 0) {
      const part = chunk.subarray(0, room);
      this.chunks.push(part);
      this.kept += part.length;
    }
    this.dropped += Math.max(0, chunk.length - Math.max(0, room));
  }

  text(): string {
    // a multi-byte character cut at the cap decodes to U+FFFD rather than failing
    const text = Buffer.concat(this.chunks).toString("utf8");
    return this.dropped ? `${text}…[truncated: ${this.dropped} more bytes]` : text;
  }
}

const SIGPIPE_NOTE =
  "exit 141 is 128 + SIGPIPE: a command in the pipeline wrote to a reader that had stopped reading (head, grep -q, …); with pipefail that becomes the pipeline's status, usually harmlessly";

const OOM_UNCONFIRMED_NOTE =
  "the box got a SIGKILL roster did not send, under a memory limit; this engine can't confirm it was the out-of-memory killer";

export async function runExec(options: ExecOptions): Promise<ExecEnvelope> {
  const started = Date.now();
  const stdout = new CappedOutput();
  const stderr = new CappedOutput();
  const envelope = (fields: Partial<ExecEnvelope> & Pick<ExecEnvelope, "status">) => ({
    stdout: stdout.text(),
    stderr: stderr.text(),
    exit_code: null,
    duration_ms: Date.now() - started,
    ...fields,
  });
  let run: Run;
  try {
    const ready = await options.takeReady?.(options.worker);
    run = await Run.start({
      ...(ready ? { ready } : {}),
      paths: options.paths,
      worker: options.worker,
      kind: "exec",
      // the one place a timeout in seconds becomes the run's ceiling
      ceiling_min: options.timeoutSecs / 60,
      drive: { command: ["bash", "-o", "pipefail", "-c", options.command] },
      stall: "none",
      reportOom: true,
      onStdout: (chunk) => stdout.push(chunk),
      onStderr: (chunk) => stderr.push(chunk),
      note: options.note,
      ...(options.env ? { env: options.env } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.spares ? { spares: options.spares } : {}),
    });
  } catch (error) {
    // refused before any record (config, image, gateway): the caller reports it as it is
    const run_id = failedRunId(error);
    if (!run_id) throw error;
    return envelope({ status: "error", run_id, error: errorMessage(error) });
  }
  const outcome = await run.done;
  const limit = run.limitReached(outcome);
  try {
    await run.settle({
      endedBy: outcome.endedBy,
      exitCode: outcome.exitCode,
      ...(limit ? { error: limit.message } : {}),
    });
  } catch (error) {
    return envelope({ status: "error", run_id: run.id, error: errorMessage(error) });
  }
  const run_id = run.id;
  if (outcome.endedBy === "ceiling")
    return envelope({ status: "timeout", signal: "SIGKILL", reason: "timeout", run_id });
  if (outcome.endedBy === "disk" || outcome.endedBy === "output")
    return envelope({
      status: "failed",
      signal: "SIGKILL",
      reason: outcome.endedBy,
      run_id,
      ...(limit ? { error: limit.message } : {}),
    });
  if (outcome.endedBy === "error")
    return envelope({ status: "error", run_id, error: limit?.message ?? "the box was lost" });
  if (outcome.endedBy === "signal")
    return envelope({ status: "error", run_id, error: "interrupted; the box was stopped" });
  if (outcome.oomKilled)
    return envelope({
      status: "failed",
      signal: "SIGKILL",
      reason: "memory",
      run_id,
      ...(outcome.oomUnconfirmed ? { note: OOM_UNCONFIRMED_NOTE } : {}),
    });
  return envelope({
    status: outcome.exitCode === 0 ? "ok" : "failed",
    exit_code: outcome.exitCode,
    run_id,
    ...(outcome.exitCode === 141 ? { note: SIGPIPE_NOTE } : {}),
  });
}
