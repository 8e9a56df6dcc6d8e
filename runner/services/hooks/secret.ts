import { readCredential } from "../../boundary/gateway/credentials/vault.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";

/**
 * A hook's shared secret: the `key` of the vault credential its `secret`
 * names, read at each delivery so a new one counts at once. A short one is
 * refused: a guessable secret would let anyone file tasks.
 */
const MIN_SECRET_CHARS = 16;

export function secretOf(paths: RosterPaths, name: string): string | undefined {
  const key = readCredential(paths.vault, name)?.key;
  return typeof key === "string" && key.length >= MIN_SECRET_CHARS ? key : undefined;
}

/** Why a hook's secret can't be used (every delivery is refused then), or undefined. */
export function secretProblem(paths: RosterPaths, name: string): string | undefined {
  if (secretOf(paths, name) !== undefined) return undefined;
  return `the vault has no credential "${name}" with a key of ${MIN_SECRET_CHARS} characters or more (roster login ${name}): every delivery is refused`;
}
