import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import type { ConfigError } from "./config-error.ts";
import { locateLine } from "./locate.ts";

/**
 * `[engine] dir`: a roster checkout whose engine is mounted over the baked one
 * for development. It must hold what is mounted (extensions/ and
 * engine/run-pi); anything less is refused naming the field, never mounted
 * half-way or skipped in silence.
 */
export function engineDirProblem(dir: string): string | undefined {
  if (!existsSync(dir)) return `${dir} does not exist`;
  if (!statSync(dir).isDirectory()) return `${dir} is not a folder`;
  for (const [path, folder] of [
    ["extensions", true],
    ["engine/run-pi", false],
  ] as const) {
    const at = join(dir, path);
    if (!existsSync(at) || statSync(at).isDirectory() !== folder)
      return `${dir} is not a roster checkout: it has no ${path}${folder ? "/" : ""}`;
  }
  return undefined;
}

export function checkEngineDir(
  value: { engine?: { dir?: string } },
  display: string,
  text: string,
  errors: ConfigError[],
): void {
  const dir = value.engine?.dir;
  const problem = dir === undefined ? undefined : engineDirProblem(dir);
  if (problem)
    errors.push({
      file: display,
      line: locateLine(text, "/engine/dir"),
      field: "engine.dir",
      message: problem,
    });
}
