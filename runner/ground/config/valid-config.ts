import { RosterError } from "../errors.ts";
import { formatConfigError } from "./config-error.ts";
import { type LoadedConfig, loadConfig } from "./load.ts";
import type { RosterPaths } from "./paths.ts";

/**
 * The deployment's config for a command that acts on it, or a refusal that
 * names every error (exit 2) and, with `notDone`, what was therefore not
 * done: one wording for every command that needs a config it can trust.
 */
export function loadValidConfig(paths: RosterPaths, notDone?: string): LoadedConfig {
  const config = loadConfig(paths.config, { vaultDir: paths.vault });
  if (config.errors.length)
    throw new RosterError(
      `config is invalid${notDone ? `, ${notDone}` : ""}:\n${config.errors.map(formatConfigError).join("\n")}`,
      { exitCode: 2 },
    );
  return config;
}
