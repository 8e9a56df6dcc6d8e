/**
 * A `roster gateway start` process a benchmark started: waits until it
 * answers /healthz (or says why it never will). Shared by the benchmarks that
 * time one checkout's gateway against another's.
 */
import type { ChildProcess } from "node:child_process";

export async function gatewayHealthy(port: number, gateway: ChildProcess): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (gateway.exitCode !== null) throw new Error(`the gateway exited (${gateway.exitCode})`);
    const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (response) => response.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((wait) => setTimeout(wait, 50));
  }
  throw new Error("the gateway did not answer /healthz");
}

/** SIGTERM, then its exit; a gateway still closing after 5 s is not the bench's to wait for. */
export async function stopGateway(gateway: ChildProcess, exited: Promise<unknown>): Promise<void> {
  if (gateway.exitCode === null) gateway.kill("SIGTERM");
  const late = setTimeout(() => gateway.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(late);
}
