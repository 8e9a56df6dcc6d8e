import { join } from "node:path";
import { PROJECT_ROOT } from "../../../ground/version.ts";

/** The command a gateway's children run (a run's or the server's gateway, a shard): this checkout's. */
export const ROSTER_BIN = join(PROJECT_ROOT, "bin/roster.mjs");

/**
 * The child's environment with NODE_EXTRA_CA_CERTS set aside for bin/roster.mjs
 * to put back, as the command's own start does: the gateway then listens ~60 ms
 * sooner. Its upstream trust store reads the file from the variable put back
 * (trust-store.ts), and the executors of its action host trust it explicitly.
 */
export function deferCaCerts(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { NODE_EXTRA_CA_CERTS: file, ...rest } = env;
  return file ? { ...rest, ROSTER_DEFERRED_CA_CERTS: file } : env;
}
