import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { RosterError } from "../errors.ts";
import { replaceFile } from "../files/atomic-replace.ts";
import { type ConfigError, formatConfigError } from "./config-error.ts";
import { type LoadedConfig, loadConfig } from "./load.ts";
import type { RosterPaths } from "./paths.ts";

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

/** One file's new text under config/ (`null` removes it). */
export interface FileChange {
  /** A path under config/. */
  file: string;
  text: string | null;
}

/**
 * Writes whole files into config/ once the copy with them loads without a
 * problem the config did not already have: problems it had are not this
 * change's to fix, so they don't stop it. A new one is refused, naming it.
 */
export async function applyConfigChange(paths: RosterPaths, changes: FileChange[]): Promise<void> {
  const write = async (root: string) => {
    for (const change of changes) {
      const target = join(root, relative(paths.config, change.file));
      if (change.text === null) await rm(target, { force: true });
      else await replaceFile(target, change.text, { mode: 0o644 });
    }
  };
  const known = new Set(
    loadConfig(paths.config, { vaultDir: paths.vault }).errors.map(formatConfigError),
  );
  const tried = await tryConfigChange(paths.config, write, { vaultDir: paths.vault });
  const fresh = tried.errors.map(formatConfigError).filter((problem) => !known.has(problem));
  const first = fresh[0];
  if (first !== undefined) {
    const more = fresh.length > 1 ? ` (and ${fresh.length - 1} more)` : "";
    throw new RosterError(`refused, nothing changed: ${first}${more}`, { exitCode: 2 });
  }
  await write(paths.config);
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
