/**
 * What `roster box exec` answers, wherever the box ran (this process or a
 * running server): one JSON object a script can trust. `exit_code` is what
 * the process exited with, never inferred; `signal` and `reason` appear only
 * when roster knows why the kernel killed it.
 */
export interface ExecEnvelope {
  status: "ok" | "failed" | "timeout" | "error";
  stdout: string;
  stderr: string;
  exit_code: number | null;
  duration_ms: number;
  signal?: "SIGKILL";
  /**
   * disk: its store outgrew `[store] max_size`, or the host's disk its reserve (error says which).
   * output: it wrote more than `[box] max_output` to stdout or stderr.
   */
  reason?: "timeout" | "memory" | "disk" | "output";
  note?: string;
  run_id?: string;
  error?: string;
}

/**
 * The process exit code that goes with an envelope: the command's own when it
 * has one, 124 for a timeout (as timeout(1) does), else 1 — never 0 without
 * an exit code of 0 from the command.
 */
export function execExitCode(envelope: ExecEnvelope): number {
  return envelope.exit_code ?? (envelope.status === "timeout" ? 124 : 1);
}
