/**
 * `hey` (Debian's package: a Go HTTP load generator, its own process on its
 * own threads) as an independent client for the gateway bench: the Node
 * client in bench/gateway.ts shares a process with the upstream and saturates
 * first. Trust comes from SSL_CERT_FILE (Go reads it); a proxy URL's userinfo
 * becomes Proxy-Authorization on the CONNECT, which is how a box sends its token.
 */
import { execFile, execFileSync } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);

export function heyAvailable(): boolean {
  try {
    execFileSync("hey", ["-n", "0"], { stdio: "ignore" });
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== "ENOENT";
  }
}

export interface HeyResult {
  rps: number;
  p50: number;
  p99: number;
  failures: number;
}

const sent = (options: { requests: number; concurrency: number }) =>
  Math.floor(options.requests / options.concurrency) * options.concurrency;

export async function hey(options: {
  url: string;
  requests: number;
  concurrency: number;
  trustFile: string;
  proxy?: string;
}): Promise<HeyResult> {
  const args = ["-c", String(options.concurrency), "-n", String(options.requests)];
  if (options.proxy) args.push("-x", options.proxy);
  const { stdout } = await run("hey", [...args, options.url], {
    env: { ...process.env, SSL_CERT_FILE: options.trustFile },
    maxBuffer: 1 << 24,
  });
  const number = (pattern: RegExp) => Number(pattern.exec(stdout)?.[1] ?? Number.NaN);
  const ok = number(/\[200\]\s+(\d+) responses/);
  return {
    rps: number(/Requests\/sec:\s+([\d.]+)/),
    p50: number(/50% in ([\d.]+) secs/) * 1000,
    p99: number(/99% in ([\d.]+) secs/) * 1000,
    // hey sends whole rounds: n rounded down to a multiple of c
    failures: sent(options) - (Number.isNaN(ok) ? 0 : ok),
  };
}
