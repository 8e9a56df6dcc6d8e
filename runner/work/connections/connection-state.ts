import { readFileSync } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { replaceFile } from "../../ground/files/atomic-replace.ts";

/**
 * What roster remembers of a connection beside its file, in
 * state/connections/<name>.json: the recipe it was added from (so verify
 * knows its harmless request) and the last verify's result (so `ls` can say
 * "failing verify"). Losing it loses nothing the config says.
 */
export interface VerifyResult {
  ok: boolean;
  /** One line: "ok (200)", "the API answered 401: …", the TLS or DNS failure. */
  detail: string;
  status?: number;
  at: string;
  as: string;
}

export interface ConnectionState {
  recipe?: string;
  verify_path?: string;
  last_verify?: VerifyResult;
  /** A connection signed in by consent: the scopes granted, and where to revoke by hand if needed. */
  oauth?: { scopes: string[]; signed_in: string; revoke_by_hand?: string };
}

export function stateFile(paths: RosterPaths, name: string): string {
  return join(paths.state, "connections", `${name}.json`);
}

export function readState(paths: RosterPaths, name: string): ConnectionState {
  try {
    const parsed: unknown = JSON.parse(readFileSync(stateFile(paths, name), "utf8"));
    return typeof parsed === "object" && parsed !== null ? (parsed as ConnectionState) : {};
  } catch {
    return {};
  }
}

export async function updateState(
  paths: RosterPaths,
  name: string,
  change: Partial<ConnectionState>,
): Promise<void> {
  await mkdir(join(paths.state, "connections"), { recursive: true });
  const next = { ...readState(paths, name), ...change };
  await replaceFile(stateFile(paths, name), `${JSON.stringify(next, null, 2)}\n`, { mode: 0o600 });
}

export async function forgetState(paths: RosterPaths, name: string): Promise<void> {
  await rm(stateFile(paths, name), { force: true });
}
