import { runBox } from "../box/lifecycle.ts";
import type { RosterPaths } from "../config/paths.ts";
import { errorMessage } from "../errors.ts";
import { mintToken, revokeToken } from "../gateway/identity.ts";
import { buildRunHome } from "../home/build-home.ts";
import type { ExecEnvelope } from "./exec-envelope.ts";
import { provision } from "./provision.ts";
import { finished, newRunId, type RunRecord, runDir, writeRecord } from "./run-record.ts";

/**
 * `roster box exec <worker> -- <command>`: one command in a fresh box of the
 * worker — its mounts, its lockdown, its gateway, no model and no engine —
 * answered by one JSON envelope a script can trust. The box comes from the
 * same path every run takes (provision, the run's $HOME, the worker's spec);
 * only the command differs. The exit code is the one the process gave: a
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
  const box = await provision({
    paths: options.paths,
    worker: options.worker,
    note: options.note,
    model: false,
    ...(options.env ? { env: options.env } : {}),
  });
  const { paths } = options;
  const { worker } = box;
  const id = newRunId();
  const dir = runDir(paths.state, worker.name, id);
  let record: RunRecord = {
    id,
    worker: worker.name,
    kind: "exec",
    state: "running",
    started_at: new Date().toISOString(),
    ceiling_min: options.timeoutSecs / 60,
    container: `roster-box-${id}`,
    runner_pid: process.pid,
  };
  let token: string | undefined;
  try {
    await writeRecord(dir, record);
    const home = await buildRunHome({ paths, worker, runDir: dir, runId: id });
    if (Object.keys(home.repos.record).length) {
      record = { ...record, repos: home.repos.record };
      await writeRecord(dir, record);
    }
    token = await mintToken(paths.identity, { subject: `org/${worker.name}`, runId: id });
    const outcome = await runBox(
      box.docker,
      box.boxSpec({
        runId: id,
        home,
        token,
        cmd: ["bash", "-o", "pipefail", "-c", options.command],
      }),
      {
        deadlineMs: options.timeoutSecs * 1000,
        ...(options.signal ? { signal: options.signal } : {}),
        fault: box.gateway.lost,
        reportOom: true,
        onStdout: (chunk) => stdout.push(chunk),
        onStderr: (chunk) => stderr.push(chunk),
      },
    );
    const repos = await box.settleRepos({ id, dir, records: record.repos });
    if (repos) record = { ...record, repos };
    record = finished(record, outcome.endedBy, outcome.exitCode);
    await writeRecord(dir, record);
    const run_id = id;
    if (outcome.endedBy === "ceiling")
      return envelope({ status: "timeout", signal: "SIGKILL", reason: "timeout", run_id });
    if (outcome.endedBy === "error")
      return envelope({
        status: "error",
        run_id,
        error: box.gateway.lost.aborted
          ? `${errorMessage(box.gateway.lost.reason)}; the box was stopped`
          : "the container engine lost the box before it exited",
      });
    if (outcome.endedBy === "signal")
      return envelope({ status: "error", run_id, error: "interrupted; the box was stopped" });
    if (outcome.oomKilled)
      return envelope({ status: "failed", signal: "SIGKILL", reason: "memory", run_id });
    return envelope({
      status: outcome.exitCode === 0 ? "ok" : "failed",
      exit_code: outcome.exitCode,
      run_id,
      ...(outcome.exitCode === 141 ? { note: SIGPIPE_NOTE } : {}),
    });
  } catch (error) {
    if (record.state === "running") {
      record = finished(record, "error", undefined, errorMessage(error));
      await writeRecord(dir, record).catch(() => undefined);
    }
    return envelope({ status: "error", run_id: id, error: errorMessage(error) });
  } finally {
    if (token) await revokeToken(paths.identity, token);
    await box.release();
  }
}
