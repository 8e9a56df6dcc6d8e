/**
 * A command run in a real pseudo-terminal, the way a person runs it: util-linux
 * `script` allocates the pty and relays our writes to it, so the program sees
 * a TTY on stdin and stdout, and Ctrl-D (\x04) reaches it through the
 * terminal's own line discipline as end-of-file.
 */
import { type ChildProcess, spawn } from "node:child_process";

export interface Pty {
  /** Everything the program printed so far (CR removed). */
  readonly output: string;
  write(text: string): void;
  /** Waits until the output (after `from`) matches; fails with the output so far. */
  waitFor(pattern: RegExp, timeoutMs?: number, from?: number): Promise<RegExpMatchArray>;
  exited: Promise<number | null>;
  kill(): void;
}

function shellQuote(arg: string): string {
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

export function spawnInPty(argv: string[], env: NodeJS.ProcessEnv): Pty {
  const child: ChildProcess = spawn(
    "script",
    ["-q", "-f", "-e", "-c", argv.map(shellQuote).join(" "), "/dev/null"],
    { env: { ...process.env, ...env, TERM: "dumb" }, stdio: ["pipe", "pipe", "pipe"] },
  );
  let output = "";
  const onData = (chunk: Buffer) => {
    output += chunk.toString("utf8").replace(/\r/g, "");
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  return {
    get output() {
      return output;
    },
    write(text) {
      child.stdin?.write(text);
    },
    async waitFor(pattern, timeoutMs = 60_000, from = 0) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const match = output.slice(from).match(pattern);
        if (match) return match;
        if (Date.now() > deadline)
          throw new Error(`timed out waiting for ${pattern} in:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    exited,
    kill() {
      child.kill("SIGKILL");
    },
  };
}
