/**
 * The real gateway as its own process (`roster gateway start`), for tests that
 * need what only a process has: its own environment (the host's trust store
 * named by SSL_CERT_FILE) or a death by SIGKILL at a moment of the test's choosing.
 */
import type { ChildProcess } from "node:child_process";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { mintToken } from "../../runner/boundary/gateway/doors/identity.ts";
import { type RosterPaths, rosterPaths } from "../../runner/ground/config/paths.ts";
import { spawnRoster } from "./cli.ts";

/** A throwaway root holding only an org.toml. */
export async function makeGatewayRoot(
  orgToml: string,
): Promise<{ root: string; paths: RosterPaths }> {
  const root = await mkdtemp(join(tmpdir(), "roster-gwp-"));
  const paths = rosterPaths({ ROSTER_ROOT: root });
  await mkdir(paths.config, { recursive: true });
  await writeFile(join(paths.config, "org.toml"), orgToml);
  return { root, paths };
}

export interface GatewayProcess {
  child: ChildProcess;
  port: number;
  /** A proxy URL carrying a fresh identity token for `worker`. */
  proxy(worker: string): Promise<string>;
  /** Resolves once the process has exited (however it ended). */
  exited: Promise<void>;
  stop(): Promise<void>;
}

/** The port a starting `roster gateway start` says it listens on; killed if it says nothing in 30 s. */
export function listeningPort(child: ChildProcess, exited: Promise<unknown>): Promise<number> {
  let output = "";
  return new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`the gateway did not start within 30 s:\n${output}`));
    }, 30_000);
    const seen = (chunk: Buffer) => {
      output += chunk.toString("utf8");
      const match = /gateway listening on 127\.0\.0\.1:(\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    };
    child.stdout?.on("data", seen);
    child.stderr?.on("data", seen);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`the gateway exited before it listened:\n${output}`));
    });
  });
}

export async function startGatewayProcess(
  root: string,
  env: NodeJS.ProcessEnv = {},
): Promise<GatewayProcess> {
  const child = spawnRoster(["gateway", "start", "--addr", "127.0.0.1:0"], {
    ROSTER_ROOT: root,
    ...env,
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const port = await listeningPort(child, exited);
  const paths = rosterPaths({ ROSTER_ROOT: root });
  return {
    child,
    port,
    exited,
    proxy: async (worker) => {
      const token = await mintToken(paths.identity, {
        subject: `org/${worker}`,
        runId: `run-${worker}-${Date.now()}`,
      });
      return `http://${token}:x@127.0.0.1:${port}`;
    },
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}
