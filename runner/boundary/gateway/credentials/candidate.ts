import { join } from "node:path";
import { readVaultCredential } from "../../../ground/vault/vault-file.ts";
import type { Credential } from "./vault.ts";

/**
 * A secret on trial: `roster connection rotate` writes the new secret to
 * data/vault/.candidates/<run>.json (sealed like any vault file) and mints a
 * token for that run, so its one check goes through the door as a box's
 * request would, injected with the candidate while every other run keeps the
 * stored secret. Only the host writes there and mints tokens: a box can name
 * neither its run nor a candidate.
 */
export const CANDIDATE_RUN = /^rotate-[a-z0-9_-]+$/;

export function candidatesDir(vaultDir: string): string {
  return join(vaultDir, ".candidates");
}

/** The candidate for credential `name` when `runId` is a rotate check's run holding one for it. */
export function candidateFor(
  vaultDir: string,
  runId: string,
  name: string,
): Credential | undefined {
  if (!CANDIDATE_RUN.test(runId)) return undefined;
  const held = readVaultCredential(candidatesDir(vaultDir), runId);
  if (!held || held.credential !== name) return undefined;
  const fields = held.fields;
  return typeof fields === "object" && fields !== null && !Array.isArray(fields)
    ? (fields as Credential)
    : undefined;
}
