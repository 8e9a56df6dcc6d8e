import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { type ConfigError, formatConfigError } from "../config/config-error.ts";
import { loadConfig } from "../config/load.ts";
import type { RosterPaths } from "../config/paths.ts";
import { RosterError } from "../errors.ts";
import { replaceFile } from "../files/atomic-replace.ts";

/**
 * A change to config/ is tried first on a copy, loaded by the real loader:
 * a change that brings a problem the config did not have is refused with that
 * problem, and nothing is written. Problems the config already had are not
 * this change's to fix, so they don't stop it.
 */
export interface FileChange {
  /** A path under config/. */
  file: string;
  /** The new text; null removes the file. */
  text: string | null;
}

export async function applyConfigChange(paths: RosterPaths, changes: FileChange[]): Promise<void> {
  const trial = await mkdtemp(join(tmpdir(), "roster-config-"));
  try {
    const copy = join(trial, "config");
    await cp(paths.config, copy, { recursive: true });
    for (const change of changes) {
      const inCopy = join(copy, relative(paths.config, change.file));
      if (change.text === null) await rm(inCopy, { force: true });
      else await replaceFile(inCopy, change.text, { mode: 0o644 });
    }
    const known = new Set(problems(paths.config, paths.vault));
    const fresh = problems(copy, paths.vault).filter((problem) => !known.has(problem));
    const first = fresh[0];
    if (first !== undefined) {
      const more = fresh.length > 1 ? ` (and ${fresh.length - 1} more)` : "";
      throw new RosterError(`refused, nothing changed: ${first}${more}`, { exitCode: 2 });
    }
  } finally {
    await rm(trial, { recursive: true, force: true });
  }
  for (const change of changes) {
    if (change.text === null) await rm(change.file, { force: true });
    else await replaceFile(change.file, change.text, { mode: 0o644 });
  }
}

/** The config's problems, with files named relative to its root so a copy's compare equal. */
function problems(root: string, vaultDir: string): string[] {
  return loadConfig(root, { vaultDir }).errors.map((error: ConfigError) =>
    formatConfigError({ ...error, file: `config/${relative(root, resolve(error.file))}` }),
  );
}
