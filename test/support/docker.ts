import type Docker from "dockerode";
import { connectDocker } from "../../runner/box/docker.ts";
import { ensureLockedNetwork, type LockedNetwork } from "../../runner/box/network.ts";

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

/** The locked network (made by the runner's own code) and the host's address on it. */
export async function testNetwork(docker: Docker): Promise<LockedNetwork> {
  return ensureLockedNetwork(docker);
}
