import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { candidatesDir } from "../../boundary/gateway/credentials/candidate.ts";
import { loadConfig } from "../../ground/config/load.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { RosterError } from "../../ground/errors.ts";
import type { CredentialOrigin } from "../../ground/vault/credential-meta.ts";
import { vaultFile, writeVaultCredential } from "../../ground/vault/vault-file.ts";
import { storeCredential } from "../runs/credentials.ts";
import { updateState, type VerifyResult } from "./connection-state.ts";
import { checkName } from "./manage.ts";
import { secretFieldOf, storedFields } from "./stored-fields.ts";
import { hasVerifyCall, verifyConnection } from "./verify.ts";

/**
 * `roster connection rotate`: the new secret is tried before it is stored.
 * It goes to the vault's candidates folder under a run of its own, and one
 * check goes through the door as a box's request would (verify.ts, with a
 * token for that run), the gateway injecting the candidate (candidate.ts)
 * while every run keeps the stored secret. Only a check that passes swaps it
 * in; the candidate is removed either way.
 */
export interface Rotated {
  swapped: boolean;
  /** The check's result; undefined when swapped unverified (--force). */
  check?: VerifyResult;
  stored: string;
}

export async function rotateConnection(
  paths: RosterPaths,
  name: string,
  secret: () => Promise<string>,
  options: { force?: boolean; as?: string; origin?: Omit<CredentialOrigin, "command"> } = {},
): Promise<Rotated> {
  checkName(name);
  const connection = loadConfig(paths.config, { vaultDir: paths.vault }).connections.get(name);
  if (!connection)
    throw new RosterError(`no connection named "${name}" (connections/${name}.toml)`, {
      exitCode: 2,
    });
  const stored = vaultFile(paths.vault, name);
  if (!existsSync(stored))
    throw new RosterError(`"${name}" has no secret stored yet: nothing to rotate`, {
      exitCode: 2,
      hint: `roster connection secret ${name}`,
    });
  const checkable =
    connection.kind !== "mcp" && "hosts" in connection
      ? hasVerifyCall(paths, name, connection.hosts)
      : false;
  if (!checkable && !options.force)
    throw new RosterError(
      `"${name}" has no verify call (its recipe names none and no --verify-path is on record), so the new secret can't be checked before it is swapped in; nothing changed`,
      {
        exitCode: 2,
        hint: `roster connection rotate ${name} --force swaps it unverified`,
      },
    );
  const field = secretFieldOf(paths, name);
  const next = { ...storedFields(paths, name), [field]: await secret() };
  const origin = { command: "connection rotate", ...options.origin };
  if (!checkable) {
    await storeCredential(paths.vault, name, next, origin);
    return { swapped: true, stored };
  }
  const runId = `rotate-${name}-${randomUUID().slice(0, 8)}`;
  const candidates = candidatesDir(paths.vault);
  await writeVaultCredential(candidates, runId, { credential: name, fields: next });
  let check: VerifyResult;
  try {
    check = await verifyConnection(paths, name, {
      runId,
      remember: false,
      ...(options.as !== undefined ? { as: options.as } : {}),
    });
  } finally {
    await rm(join(candidates, `${runId}.json`), { force: true });
  }
  if (!check.ok) return { swapped: false, check, stored };
  await storeCredential(paths.vault, name, next, origin);
  // the check passed with the secret now stored: that is the connection's state
  await updateState(paths, name, { last_verify: check });
  return { swapped: true, check, stored };
}
