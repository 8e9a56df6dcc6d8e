/**
 * The vault's ages and keys as the connection commands show them: when each
 * secret was set and by whom, what expires soon (`ls`), a rotation checked
 * through the door before it swaps (`rotate`), and sealing the vault with its
 * key (`encrypt`).
 */
import { rosterPaths } from "../../ground/config/paths.ts";
import { operatorName } from "../../ground/operator.ts";
import { type Age, agePhrases } from "../../ground/vault/credential-age.ts";
import { type CredentialOrigin, parseExpires } from "../../ground/vault/credential-meta.ts";
import {
  checkVaultOpens,
  encryptVault,
  type VaultStatus,
  vaultStatus,
} from "../../ground/vault/vault-file.ts";

export interface RotateFlags {
  secretEnv?: string;
  force?: boolean;
  as?: string;
  expires?: string;
  json?: boolean;
}

/** Who is storing a secret now, and the `--expires` they gave: checked before any secret is asked for. */
export function originOf(expires: string | undefined): Omit<CredentialOrigin, "command"> {
  return {
    operator: operatorName(),
    ...(expires !== undefined ? { expiresAt: parseExpires(expires) } : {}),
  };
}

export { type Age, ageOf } from "../../ground/vault/credential-age.ts";

/** `  set 3d ago (connection secret by cli:ann); EXPIRES in 2d`: the words `ls` adds. */
export function ageWords(age: Age | undefined, now = Date.now()): string {
  if (!age) return "";
  const { set, expiry } = agePhrases(age, now);
  return `  ${set}${expiry ? `; ${expiry}` : ""}`;
}

/** `roster connection rotate`: the new secret checked through the door, swapped in only when it passes. */
export async function rotateCommand(name: string, flags: RotateFlags): Promise<void> {
  const origin = originOf(flags.expires);
  const { rotateConnection } = await import("../../work/connections/rotate.ts");
  const { readSecret } = await import("../../work/connections/secret-input.ts");
  const rotated = await rotateConnection(
    rosterPaths(),
    name,
    () => readSecret({ label: name, secretEnv: flags.secretEnv }),
    {
      origin,
      ...(flags.force ? { force: true } : {}),
      ...(flags.as !== undefined ? { as: flags.as } : {}),
    },
  );
  if (!rotated.swapped) process.exitCode = 1;
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ name, ...rotated })}\n`);
    return;
  }
  const { check } = rotated;
  process.stdout.write(
    rotated.swapped
      ? `rotated the secret of "${name}" in ${rotated.stored}: ${check ? `checked first (as ${check.as}): ${check.detail}` : "swapped unverified (--force)"}\n`
      : `kept the old secret of "${name}" (still live): the new one failed its check (as ${check?.as}): ${check?.detail}\n`,
  );
}

/** `roster connection encrypt`: every plaintext vault file sealed with the configured key. */
export async function encryptCommand(flags: { json?: boolean }): Promise<void> {
  const paths = rosterPaths();
  const sealed = await encryptVault(paths.vault);
  const status = vaultStatus(paths.vault);
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ encrypted: sealed, ...status })}\n`);
    return;
  }
  process.stdout.write(
    `${sealed.length ? `encrypted ${sealed.join(", ")}` : "no plaintext file left to encrypt"}; the vault holds ${status.sealed.length} encrypted file(s), key from ${status.key}\n`,
  );
}

/** One line for `box doctor`: whether the vault is sealed, and with what. */
export function vaultLine(): { ok: boolean; line: string; json: Record<string, unknown> } {
  const paths = rosterPaths();
  // a broken key configuration is the line itself: doctor reports, it doesn't stop
  let status: VaultStatus;
  try {
    status = vaultStatus(paths.vault);
    checkVaultOpens(paths.vault);
  } catch (error) {
    const line = error instanceof Error ? error.message : String(error);
    return { ok: false, line, json: { vault: { ok: false, error: line } } };
  }
  const json = { vault: { ok: true, ...status } };
  if (!status.key)
    return {
      ok: true,
      line: `plaintext (${status.plaintext.length} file(s), mode 0600); no vault key (ROSTER_VAULT_KEY_FILE) to encrypt it at rest`,
      json,
    };
  return {
    ok: true,
    line: `encrypted with the key in ${status.key} (${status.sealed.length} file(s))${status.plaintext.length ? `; ${status.plaintext.length} still plaintext: roster connection encrypt` : ""}`,
    json,
  };
}
