import { spawn } from "node:child_process";

/**
 * Runs a host program (debootstrap, npm pack, tar) and streams its output line by
 * line, keeping the tail for error messages. Never goes through a shell.
 */
export interface ProgramResult {
  code: number;
  tail: string[];
}

export async function runHostProgram(
  command: string,
  args: string[],
  options: { cwd?: string; onLine?: (line: string) => void; tailLines?: number } = {},
): Promise<ProgramResult> {
  const keep = options.tailLines ?? 20;
  const tail: string[] = [];
  const child = spawn(command, args, { cwd: options.cwd, stdio: ["ignore", "pipe", "pipe"] });
  const collect = (stream: NodeJS.ReadableStream) => {
    let buffer = "";
    stream.setEncoding("utf8");
    stream.on("data", (chunk: string) => {
      buffer += chunk;
      let newline = buffer.indexOf("\n");
      while (newline >= 0) {
        const line = buffer.slice(0, newline).trimEnd();
        buffer = buffer.slice(newline + 1);
        if (line) {
          tail.push(line);
          if (tail.length > keep) tail.shift();
          options.onLine?.(line);
        }
        newline = buffer.indexOf("\n");
      }
    });
  };
  if (child.stdout) collect(child.stdout);
  if (child.stderr) collect(child.stderr);
  const code = await new Promise<number>((resolve) => {
    child.on("error", (error) => {
      tail.push(error.message);
      resolve(127);
    });
    child.on("close", (status) => resolve(status ?? 1));
  });
  return { code, tail };
}

/** True when `name` is an executable on PATH. */
export async function onPath(name: string): Promise<boolean> {
  const result = await runHostProgram("sh", ["-c", `command -v "$0"`, name]);
  return result.code === 0;
}
