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

/**
 * A locked network of the tests' own (made by the runner's code, masquerade
 * off) and the host's address on it. Not `roster-locked`: the runner's host
 * firewall rule on that one allows a single gateway port, which belongs to
 * whichever runner test installed it last.
 */
export const TEST_NETWORK = "roster-test-locked";
export async function testNetwork(docker: Docker): Promise<LockedNetwork> {
  return ensureLockedNetwork(docker, TEST_NETWORK);
}
