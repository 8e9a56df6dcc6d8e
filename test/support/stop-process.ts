import type { ChildProcess } from "node:child_process";

/** SIGTERM to a child still running, and its exit awaited (a server a suite started, say). */
export async function stopProcess(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
}
