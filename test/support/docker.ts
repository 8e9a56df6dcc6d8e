import { execFileSync } from "node:child_process";
import { isIPv4 } from "node:net";
import type Docker from "dockerode";
import { connectEngine } from "../../runner/boundary/box/connect.ts";
import type { DockerEngine } from "../../runner/boundary/box/docker-engine.ts";
import type { BoxEngine } from "../../runner/boundary/box/engine.ts";

/**
 * The container engine for tests: the one roster itself would connect to
 * (DOCKER_HOST, else the engine's socket), so a suite run with DOCKER_HOST at
 * Podman's socket tests Podman. Locally, a missing engine skips the engine
 * suites with a message; with CI=true it is a failure, never a silent skip.
 */
export const isCI = process.env.CI === "true";

let connected: Promise<BoxEngine | undefined> | undefined;

/** roster's own engine client (runner/boundary/box/engine.ts), for helpers that start boxes as roster does. */
export function testEngine(): Promise<BoxEngine | undefined> {
  connected ??= connectEngine().catch((error: unknown) => {
    if (isCI) throw error;
    console.warn(`skipping container-engine tests: ${(error as Error).message}`);
    return undefined;
  });
  return connected;
}

/**
 * The engine's API client itself (dockerode), for tests that look at what
 * roster made: containers, images, volumes. Podman serves the same API.
 */
export async function testDocker(): Promise<Docker | undefined> {
  const engine = await testEngine();
  return engine ? (engine as unknown as DockerEngine).client : undefined;
}

/**
 * Limits for a plain `docker run` a test makes itself (a neighbour, a wheel
 * builder): roster's own for its boxes. Podman's defaults are above what the
 * host lets it set, and its container then fails at init; Docker takes them too.
 */
export const RUN_LIMITS = ["--ulimit", "nofile=4096:4096", "--ulimit", "nproc=32768:32768"];

/**
 * `address` when it names another machine an attempt can aim at, else a
 * loud error: an empty name, 0.0.0.0 or a loopback address is the box itself,
 * which answers, so an attempt aimed there "escapes" without leaving.
 */
export function aimAt(what: string, address: string | undefined): string {
  if (!address || !isIPv4(address) || address === "0.0.0.0" || address.startsWith("127."))
    throw new Error(`${what}: ${JSON.stringify(address ?? "")} is not an address to aim at`);
  return address;
}

/**
 * The default bridge's gateway (IPv4): the one IPAM reports, else the address
 * of the bridge's interface on the host (Docker 20.10 often reports no
 * gateway for the default bridge); undefined while the engine or the network
 * is missing.
 */
export function bridgeGateway(): string | undefined {
  const run = (command: string, args: string[]) =>
    execFileSync(command, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  try {
    const [gateways = "", name = ""] = run("docker", [
      "network",
      "inspect",
      "bridge",
      "-f",
      '{{range .IPAM.Config}}{{.Gateway}} {{end}}|{{index .Options "com.docker.network.bridge.name"}}',
    ]).split("|");
    const reported = gateways.split(/\s+/).find((address) => isIPv4(address));
    if (reported || !name.trim()) return reported;
    // "5: docker0    inet 172.17.0.1/16 brd …"
    const inet = /\binet (\d+\.\d+\.\d+\.\d+)\//.exec(
      run("ip", ["-4", "-o", "addr", "show", "dev", name.trim()]),
    );
    return inet?.[1];
  } catch {
    return undefined;
  }
}

/**
 * The host's address on Docker's default bridge: where a box would aim at the
 * host if it had a network (it has none), so attempts to reach the host use it.
 * Throws when there is none (the engine restarting, the bridge gone): an
 * attempt aimed at nothing would test nothing (an empty name is 0.0.0.0, the
 * box's own loopback).
 */
export function hostBridgeAddress(): string {
  return aimAt(
    "the host on Docker's default bridge (is the engine up, does `docker network inspect bridge` show a gateway?)",
    bridgeGateway(),
  );
}

/** A running container's IPv4 address on its network; throws when it has none. */
export function containerAddress(container: string): string {
  const found = execFileSync(
    "docker",
    ["inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", container],
    { encoding: "utf8" },
  )
    .split(/\s+/)
    .find((address) => isIPv4(address));
  return aimAt(`container ${container.slice(0, 12)}`, found);
}
