import type { CredentialOrigin } from "../../ground/vault/credential-meta.ts";
import { writeVaultCredential } from "../../ground/vault/vault-file.ts";

/**
 * Writes a vault credential (0600, atomically, sealed when a vault key is
 * configured) with its record of age. Only ever read by the gateway.
 */
export async function storeCredential(
  vaultDir: string,
  name: string,
  credential: Record<string, string | number>,
  origin: CredentialOrigin = { command: "run (from the environment)" },
): Promise<void> {
  await writeVaultCredential(vaultDir, name, credential, origin);
}
