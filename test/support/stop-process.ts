import type { ChildProcess } from "node:child_process";

/** How long a stopping process may take before it is killed and the test fails. */
const STOP_WITHIN_MS = 90_000;

/**
 * SIGTERM to a child still running, and its exit awaited (a server a suite
 * started, say). One that has already ended is left be; one still running
 * after `withinMs` is killed, and the error names it (with `detail()`, the
 * end of its log say), so a stuck stop fails where it is, not as a hook's
 * timeout minutes later.
 */
export async function stopProcess(
  child: ChildProcess | undefined,
  options: { withinMs?: number; detail?: () => string } = {},
): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const withinMs = options.withinMs ?? STOP_WITHIN_MS;
  let timer: NodeJS.Timeout | undefined;
  const exited = new Promise<boolean>((resolve) => {
    child.once("exit", () => resolve(true));
    timer = setTimeout(() => resolve(false), withinMs);
  });
  child.kill("SIGTERM");
  const stopped = await exited;
  clearTimeout(timer);
  if (stopped) return;
  child.kill("SIGKILL");
  throw new Error(
    `pid ${child.pid} did not stop within ${withinMs / 1000} s of SIGTERM${options.detail?.() ?? ""}`,
  );
}

/** The end of a process's log, for an error about it. */
export function endOfLog(log: string): string {
  return `; the end of its log:\n${log.slice(-4_000) || "(nothing)"}`;
}
