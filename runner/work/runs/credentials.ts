import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { replaceFile } from "../../ground/files/atomic-replace.ts";

/** Writes a vault credential (0600, atomically). Only ever read by the gateway. */
export async function storeCredential(
  vaultDir: string,
  name: string,
  credential: Record<string, string | number>,
): Promise<void> {
  if (!/^[a-z0-9_-]+$/.test(name))
    throw new Error(`credential names are lower-case letters, digits, '_' or '-' (got "${name}")`);
  await mkdir(vaultDir, { recursive: true, mode: 0o700 });
  const file = join(vaultDir, `${name}.json`);
  await replaceFile(file, `${JSON.stringify(credential)}\n`, { mode: 0o600 });
}
