import { execFileSync } from "node:child_process";
import type Docker from "dockerode";
import { connectDocker } from "../../runner/box/docker.ts";

/**
 * Docker for tests. Locally, a missing engine skips the Docker suites with a
 * message; with CI=true it is a failure, never a silent skip.
 */
export const isCI = process.env.CI === "true";

export async function testDocker(): Promise<Docker | undefined> {
  try {
    return (await connectDocker()).client;
  } catch (error) {
    if (isCI) throw error;
    console.warn(`skipping Docker tests: ${(error as Error).message}`);
    return undefined;
  }
}

/**
 * The host's address on Docker's default bridge: where a box would aim at the
 * host if it had a network (it has none), so attempts to reach the host use it.
 */
export function hostBridgeAddress(): string {
  return execFileSync(
    "docker",
    ["network", "inspect", "bridge", "-f", "{{range .IPAM.Config}}{{.Gateway}}{{end}}"],
    { encoding: "utf8" },
  ).trim();
}
