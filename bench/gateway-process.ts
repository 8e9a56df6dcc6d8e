/**
 * A `roster gateway start` process a benchmark started: waits until it
 * answers /healthz (or says why it never will). Shared by the benchmarks that
 * time one checkout's gateway against another's.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type RosterPaths, rosterPaths } from "../runner/ground/config/paths.ts";

/** A roster root for a door bench: one grant letting a box reach 127.0.0.1, whose CA is trusted. */
export function benchRoot(root: string, upstreamCaFile: string): RosterPaths {
  const paths = rosterPaths({ ROSTER_ROOT: root });
  mkdirSync(paths.config, { recursive: true });
  writeFileSync(
    join(paths.config, "org.toml"),
    `[gateway]\nupstream_ca = ["${upstreamCaFile}"]\n\n[[grant]]\nname = "bench"\nverdict = "allow"\nmatch = { host = "127.0.0.1" }\n`,
  );
  return paths;
}

/** `roster gateway start` of a checkout (`tree`) for a root, on loopback at `port`, and its exit. */
export function spawnGateway(
  tree: string,
  root: string,
  port: number,
): { gateway: ChildProcess; exited: Promise<unknown> } {
  const gateway = spawn(
    join(tree, "bin/roster.mjs"),
    ["gateway", "start", "--addr", `127.0.0.1:${port}`],
    { env: { ...process.env, ROSTER_ROOT: root }, stdio: "ignore" },
  );
  return { gateway, exited: new Promise((gone) => gateway.once("exit", gone)) };
}

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
