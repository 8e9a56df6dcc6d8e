import { spawn } from "node:child_process";
import { performance } from "node:perf_hooks";

/** The middle value (the upper one of an even count). */
export const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

/** Milliseconds from spawn to exit of one command; a non-zero exit is an error. */
export async function timed(argv: string[], env: NodeJS.ProcessEnv = {}): Promise<number> {
  const started = performance.now();
  const child = spawn(argv[0] as string, argv.slice(1), {
    env: { ...process.env, ...env },
    stdio: "ignore",
  });
  const code = await new Promise((resolve) => child.once("exit", resolve));
  if (code !== 0) throw new Error(`${argv.join(" ")} exited ${String(code)}`);
  return performance.now() - started;
}
