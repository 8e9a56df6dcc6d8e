/**
 * What `roster box exec | cp-in | cp-out` do: one command in a fresh box of a
 * worker, and single files in and out of a worker's store. The CLI only
 * declares these commands; this module is loaded when one runs.
 */
import { errorMessage, RosterError, userFailure } from "../../ground/errors.ts";

export interface ExecFlags {
  timeout: string;
  local?: boolean;
}

/** `roster box exec`: always one JSON envelope on stdout, even when the box never started. */
export async function execCommand(
  worker: string,
  words: string[],
  flags: ExecFlags,
): Promise<void> {
  const timeoutSecs = Number(flags.timeout);
  if (!Number.isInteger(timeoutSecs) || timeoutSecs < 1)
    throw new RosterError(`--timeout must be a whole number of seconds (got "${flags.timeout}")`, {
      exitCode: 2,
    });
  // the timeout is the box's ceiling: the one bound every run has
  const { ceilingProblem } = await import("../../ground/config/ceiling.ts");
  const problem = ceilingProblem(timeoutSecs / 60);
  if (problem) throw new RosterError(problem, { exitCode: 2 });
  const command = words.join(" ").trim();
  if (!command) throw new RosterError("the command is empty", { exitCode: 2 });
  const { rosterPaths } = await import("../../ground/config/paths.ts");
  const paths = rosterPaths();
  const abort = new AbortController();
  const onSignal = () => abort.abort();
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  const started = Date.now();
  const note = (text: string) => process.stderr.write(`${text}\n`);
  try {
    const envelope = await (async () => {
      if (!flags.local) {
        // a running server takes it: its gateway, engine connection and modules are warm
        const { execThroughServer } = await import("../../services/server/run-client.ts");
        const handed = await execThroughServer(
          paths,
          { worker, command, timeout_secs: timeoutSecs },
          { note, signal: abort.signal },
        );
        if (handed) return handed;
      }
      const { runExec } = await import("../../work/runs/exec.ts");
      return runExec({ paths, worker, command, timeoutSecs, signal: abort.signal, note });
    })().catch((error: unknown) => {
      // the box never started (config, the engine, the gateway): still one envelope, and exit 2
      process.exitCode = userFailure(error)?.exitCode ?? 1;
      return {
        status: "error" as const,
        stdout: "",
        stderr: "",
        exit_code: null,
        duration_ms: Date.now() - started,
        error: errorMessage(error),
      };
    });
    process.stdout.write(`${JSON.stringify(envelope)}\n`);
    const { execExitCode } = await import("../../work/runs/exec-envelope.ts");
    process.exitCode ??= execExitCode(envelope);
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

/** `roster box cp-in` / `cp-out`: one file, never outside the worker's store. */
export async function copyCommand(
  direction: "in" | "out",
  worker: string,
  from: string,
  to: string,
  flags: { json?: boolean },
): Promise<void> {
  const { rosterPaths } = await import("../../ground/config/paths.ts");
  const { loadWorker } = await import("../../work/runs/start-1-provision.ts");
  const store = await import("../../boundary/store/copy.ts");
  const paths = rosterPaths();
  await loadWorker(paths, worker);
  const bytes =
    direction === "in"
      ? await store.copyIntoStore(paths, worker, from, to)
      : await store.copyOutOfStore(paths, worker, from, to);
  const storePath = direction === "in" ? to : from;
  process.stdout.write(
    flags.json
      ? `${JSON.stringify({ worker, direction, store_path: storePath, bytes })}\n`
      : `copied ${bytes} bytes ${direction === "in" ? `into ${worker}'s store at ${to}` : `from ${worker}'s store to ${to}`}\n`,
  );
}
