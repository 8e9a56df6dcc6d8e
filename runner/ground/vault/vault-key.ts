import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { RosterError } from "../errors.ts";

/**
 * The key the vault is sealed with, when the operator gave one: a file named by
 * ROSTER_VAULT_KEY_FILE, else systemd's credential `roster-vault-key` (in
 * $CREDENTIALS_DIRECTORY). It never lives beside the vault, so a copy of the
 * data root holds ciphertext and no key. A key file anyone else may read is
 * refused: the key would be no better kept than the secrets it seals.
 */
export interface VaultKey {
  key: Buffer;
  /** Where it was read from, for messages. */
  from: string;
}

export const KEY_ENV = "ROSTER_VAULT_KEY_FILE";
export const SYSTEMD_KEY_NAME = "roster-vault-key";

/** The file the key would be read from, or undefined when none is configured. */
export function vaultKeyFile(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const named = env[KEY_ENV];
  if (named) return named;
  const dir = env.CREDENTIALS_DIRECTORY;
  if (!dir) return undefined;
  const file = join(dir, SYSTEMD_KEY_NAME);
  try {
    statSync(file);
    return file;
  } catch {
    return undefined;
  }
}

/** The configured key, undefined without one; a configured key that can't be used throws. */
export function vaultKey(env: NodeJS.ProcessEnv = process.env): VaultKey | undefined {
  const file = vaultKeyFile(env);
  if (!file) return undefined;
  let text: string;
  try {
    const mode = statSync(file).mode;
    if (mode & 0o077)
      throw new RosterError(
        `${file}: the vault key file is readable by others (mode ${(mode & 0o777).toString(8)}); chmod 600 it`,
        { exitCode: 2 },
      );
    text = readFileSync(file, "utf8").trim();
  } catch (error) {
    if (error instanceof RosterError) throw error;
    throw new RosterError(`${file}: the vault key file can't be read (${KEY_ENV})`, {
      exitCode: 2,
      cause: error,
    });
  }
  const key = parseKey(text);
  if (!key)
    throw new RosterError(
      `${file}: the vault key must be 32 bytes, written as 64 hex digits or base64 (openssl rand -hex 32)`,
      { exitCode: 2 },
    );
  return { key, from: file };
}

function parseKey(text: string): Buffer | undefined {
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, "hex");
  if (/^[A-Za-z0-9+/_-]{42,44}={0,2}$/.test(text)) {
    const key = Buffer.from(text.replace(/-/g, "+").replace(/_/g, "/"), "base64");
    if (key.length === 32) return key;
  }
  return undefined;
}
