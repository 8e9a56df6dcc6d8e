import { loadConfigRead, type ReadConfig } from "../../../ground/config/config-digest.ts";
import { type ConfigError, formatConfigError } from "../../../ground/config/config-error.ts";
import type { LoadedConfig } from "../../../ground/config/load.ts";
import type { RosterPaths } from "../../../ground/config/paths.ts";
import { errorMessage, RosterError } from "../../../ground/errors.ts";
import { ConfigSource, type ConfigSourceOptions } from "../settings/config-source.ts";
import { runPolicyTests } from "./tests.ts";

/**
 * A config is trusted only once it passes its own `[[test]]` cases, wherever
 * it is taken: the gateway takes a changed config only if it does (the last
 * good one stays otherwise), and the server and a run refuse to start on one
 * that fails, as on a broken one, naming each case.
 */

/** The cases a config that loads fails, each at its test's line (`test.N`). */
export function policyTestFailures(config: LoadedConfig): ConfigError[] {
  try {
    return runPolicyTests(config).failures;
  } catch (error) {
    // a case the ruling can't even ask is a failed case, never a crash at the door
    return [
      {
        file: config.root,
        line: 0,
        field: "test",
        message: `the [[test]] cases could not be run: ${errorMessage(error)}`,
      },
    ];
  }
}

/** The gateway's view of the config, taking only configs that pass their tests. */
export function testedConfigSource(
  root: string,
  options: Omit<ConfigSourceOptions, "vet"> = {},
): ConfigSource {
  return new ConfigSource(root, { ...options, vet: policyTestFailures });
}

/**
 * The deployment's config for a command that starts something on it (the
 * server, a run), with the files it was read from; refused, exit 2, when it
 * is broken or fails one of its own `[[test]]` cases, `notDone` saying what
 * was therefore not done.
 */
export function loadTestedConfig(paths: RosterPaths, notDone: string): ReadConfig {
  const read = loadConfigRead(paths.config, { vaultDir: paths.vault });
  const { config } = read;
  if (!read.settled)
    throw new RosterError(`the config kept changing while it was read, ${notDone}`, {
      exitCode: 2,
    });
  if (config.errors.length)
    throw new RosterError(
      `config is invalid, ${notDone}:\n${config.errors.map(formatConfigError).join("\n")}`,
      { exitCode: 2 },
    );
  const failures = policyTestFailures(config);
  if (failures.length)
    throw new RosterError(
      `config fails its own [[test]] cases, ${notDone}:\n${failures.map(formatConfigError).join("\n")}`,
      { exitCode: 2 },
    );
  return read;
}
