import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { RosterError } from "../errors.ts";
import { type ConfigError, formatConfigError } from "./config-error.ts";
import { type LoadedConfig, loadConfig } from "./load.ts";

/**
 * A change to the operator's config tried on a copy first. The gateway re-reads
 * the config whenever a file changes and denies everything while it is broken,
 * so a command that edits config must never leave a broken file in place, not
 * even for a moment: it copies the config folder aside, makes its change
 * there, loads the copy with the real loader, and only then (the copy being
 * valid) makes the same change for real. Problems name the real files.
 */
export async function tryConfigChange(
  configRoot: string,
  change: (root: string) => Promise<void>,
  options: { vaultDir?: string } = {},
): Promise<LoadedConfig> {
  const scratch = await mkdtemp(join(tmpdir(), "roster-config-"));
  const copy = join(scratch, "config");
  try {
    await cp(configRoot, copy, { recursive: true, verbatimSymlinks: true });
    await change(copy);
    const loaded = loadConfig(copy, options);
    loaded.root = configRoot;
    loaded.errors.splice(
      0,
      loaded.errors.length,
      ...loaded.errors.map((error) => realFile(error, copy, configRoot)),
    );
    loaded.warnings.splice(
      0,
      loaded.warnings.length,
      ...loaded.warnings.map((warning) => warning.split(copy).join(configRoot)),
    );
    return loaded;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** Refuses, naming every problem, when the tried config has any; changes nothing. */
export function refuseUnlessValid(loaded: LoadedConfig, what: string): void {
  if (!loaded.errors.length) return;
  throw new RosterError(
    `${what} would leave the config invalid, so nothing was changed:\n${loaded.errors
      .map(formatConfigError)
      .join("\n")}`,
    { exitCode: 2, hint: "fix these (roster validate lists them), then try again" },
  );
}

/** An error's file as the loader would have shown the real one (short under the working directory). */
function realFile(error: ConfigError, copy: string, real: string): ConfigError {
  const absolute = resolve(process.cwd(), error.file);
  const inCopy = relative(copy, absolute);
  if (inCopy.startsWith("..")) return error;
  const file = join(real, inCopy);
  const near = relative(process.cwd(), file);
  return { ...error, file: near && !near.startsWith("..") ? near : file };
}
