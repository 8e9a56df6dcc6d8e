/** Runs the real `roster` command (bin/roster.mjs) as a child process, the way a user does. */
import { execFile, spawn } from "node:child_process";
import { join } from "node:path";
import { PROJECT_ROOT } from "../../runner/ground/version.ts";

export const ROSTER_BIN = join(PROJECT_ROOT, "bin/roster.mjs");

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function runRoster(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  timeoutMs = 180_000,
): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [ROSTER_BIN, ...args],
      { env: { ...process.env, ...env }, timeout: timeoutMs, maxBuffer: 32 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (error as { code?: unknown }).code : 0;
        resolve({ code: typeof code === "number" ? code : 1, stdout, stderr });
      },
    );
  });
}

/**
 * The real `roster` with `input` piped on its stdin and then closed (a secret
 * given the way `echo … | roster connection add …` gives it).
 */
export function runRosterWithInput(
  args: string[],
  input: string,
  env: NodeJS.ProcessEnv = {},
  timeoutMs = 180_000,
): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [ROSTER_BIN, ...args],
      { env: { ...process.env, ...env }, timeout: timeoutMs, maxBuffer: 32 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (error as { code?: unknown }).code : 0;
        resolve({ code: typeof code === "number" ? code : 1, stdout, stderr });
      },
    );
    child.stdin?.end(input);
  });
}

export function spawnRoster(args: string[], env: NodeJS.ProcessEnv = {}) {
  return spawn(process.execPath, [ROSTER_BIN, ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
}
