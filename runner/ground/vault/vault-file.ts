import { readdirSync, readFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { RosterError } from "../errors.ts";
import { replaceFile } from "../files/atomic-replace.ts";
import { type CredentialOrigin, writeCredentialMeta } from "./credential-meta.ts";
import { envelopeOf, seal, unseal } from "./sealed.ts";
import { KEY_ENV, SYSTEMD_KEY_NAME, vaultKey } from "./vault-key.ts";

/**
 * The one reader and writer of data/vault/<name>.json. With a vault key
 * (vault-key.ts) each write is sealed (sealed.ts) and each sealed read is
 * authenticated; a plaintext file still reads, and is sealed on its next
 * write. A sealed file with no key, or one the key does not open, throws one
 * line naming the file: the gateway serves nothing from it (fail closed).
 */
export type VaultCredential = Record<string, unknown>;

const NAME = /^[a-z0-9_-]+$/;

export function vaultFile(dir: string, name: string): string {
  return join(dir, `${name}.json`);
}

/** The credential, undefined when absent or not a JSON object; throws when sealed and not openable. */
export function readVaultCredential(
  dir: string,
  name: string,
  env: NodeJS.ProcessEnv = process.env,
): VaultCredential | undefined {
  if (!NAME.test(name)) return undefined;
  const file = vaultFile(dir, name);
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, "utf8"));
  } catch {
    return undefined;
  }
  const envelope = envelopeOf(parsed);
  if (envelope) {
    const key = vaultKey(env);
    if (!key)
      throw new RosterError(
        `${file}: the vault file is encrypted and no vault key is configured (${KEY_ENV}, or $CREDENTIALS_DIRECTORY/${SYSTEMD_KEY_NAME})`,
      );
    const text = unseal(name, envelope, key.key);
    if (text === undefined)
      throw new RosterError(
        `${file}: the vault file does not open with the key in ${key.from} (a wrong key, a changed file, or one renamed from another credential)`,
      );
    try {
      parsed = JSON.parse(text);
    } catch {
      return undefined;
    }
  }
  return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
    ? (parsed as VaultCredential)
    : undefined;
}

/** Writes a credential (0600, atomically; sealed when there is a key) and, with an origin, its record of age. */
export async function writeVaultCredential(
  dir: string,
  name: string,
  credential: VaultCredential,
  origin?: CredentialOrigin,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  if (!NAME.test(name))
    throw new Error(`credential names are lower-case letters, digits, '_' or '-' (got "${name}")`);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const key = vaultKey(env);
  const text = `${JSON.stringify(credential)}\n`;
  await replaceFile(vaultFile(dir, name), key ? seal(name, text, key.key) : text, { mode: 0o600 });
  if (origin) await writeCredentialMeta(dir, name, credential, origin);
}

/** Credential names in the vault (its own temporaries, locks and age records are not). */
export function vaultNames(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((file) => file.endsWith(".json") && NAME.test(file.slice(0, -".json".length)))
      .map((file) => file.slice(0, -".json".length))
      .sort();
  } catch {
    return [];
  }
}

/** Whether a vault file is sealed (false for plaintext or absent). */
export function isSealed(dir: string, name: string): boolean {
  try {
    return envelopeOf(JSON.parse(readFileSync(vaultFile(dir, name), "utf8"))) !== undefined;
  } catch {
    return false;
  }
}

export interface VaultStatus {
  /** Where the key comes from; undefined without one. */
  key: string | undefined;
  sealed: string[];
  plaintext: string[];
}

/** What `box doctor` and `connection encrypt` report. A broken key configuration throws. */
export function vaultStatus(dir: string, env: NodeJS.ProcessEnv = process.env): VaultStatus {
  const names = vaultNames(dir);
  const sealed = names.filter((name) => isSealed(dir, name));
  return {
    key: vaultKey(env)?.from,
    sealed,
    plaintext: names.filter((name) => !sealed.includes(name)),
  };
}

/**
 * Every sealed file opened once: what a gateway checks before it starts, so
 * a missing or wrong key is one clear line at start, not a 503 per request.
 */
export function checkVaultOpens(dir: string, env: NodeJS.ProcessEnv = process.env): void {
  for (const name of vaultNames(dir)) if (isSealed(dir, name)) readVaultCredential(dir, name, env);
}

/** Seals every plaintext file with the configured key; the names sealed. Without a key it refuses. */
export async function encryptVault(
  dir: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string[]> {
  if (!vaultKey(env))
    throw new RosterError(
      `no vault key is configured: set ${KEY_ENV} to a file holding 32 bytes (openssl rand -hex 32 > key; chmod 600 key), or give systemd's ${SYSTEMD_KEY_NAME} credential`,
      { exitCode: 2 },
    );
  const done: string[] = [];
  for (const name of vaultNames(dir)) {
    if (isSealed(dir, name)) continue;
    const credential = readVaultCredential(dir, name, env);
    if (!credential) continue;
    await writeVaultCredential(dir, name, credential, undefined, env);
    done.push(name);
  }
  return done;
}
