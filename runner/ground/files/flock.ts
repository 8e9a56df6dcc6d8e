import { spawn } from "node:child_process";
import type { FileHandle } from "node:fs/promises";

/**
 * flock(2) on a descriptor we hold. Node has none, so util-linux `flock`
 * locks the open file description we hand it as fd 3 and exits; the lock
 * stays with our descriptor until we close it, and the kernel drops it when
 * this process dies (nothing stale to clean up after a crash).
 *
 * Resolves true when taken, false when still busy after waitMs (0: don't
 * wait); rejects when `signal` aborts the wait.
 */
export function flockFd(
  file: FileHandle,
  mode: "shared" | "exclusive",
  waitMs: number,
  signal?: AbortSignal,
): Promise<boolean> {
  const wait = waitMs > 0 ? ["-w", String(Math.max(0.01, waitMs / 1000))] : ["-n"];
  return new Promise((resolve, reject) => {
    const child = spawn("flock", [mode === "shared" ? "-s" : "-x", ...wait, "3"], {
      stdio: ["ignore", "ignore", "pipe", file.fd],
      ...(signal ? { signal } : {}),
    });
    const stderr: Buffer[] = [];
    child.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk));
    child.on("error", reject);
    child.on("close", (code) => {
      if (code === 0) resolve(true);
      else if (code === 1 && !Buffer.concat(stderr).length) resolve(false);
      else reject(new Error(`flock failed: ${Buffer.concat(stderr).toString().trim()}`));
    });
  });
}
