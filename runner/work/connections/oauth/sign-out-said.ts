import { loadConfig } from "../../../ground/config/load.ts";
import type { RosterPaths } from "../../../ground/config/paths.ts";
import { readState } from "../connection-state.ts";
import { signOut } from "./revoke.ts";

/**
 * What `connection rm` says of a signed-in connection: revoked at the
 * provider, or why not and where a person revokes it by hand. Undefined for
 * a connection that holds no OAuth tokens.
 */
export async function signOutSaid(
  paths: RosterPaths,
  name: string,
): Promise<{ ok: boolean; line: string } | undefined> {
  const config = loadConfig(paths.config, { vaultDir: paths.vault });
  const outcome = await signOut(config, paths.vault, name);
  const byHand = readState(paths, name).oauth?.revoke_by_hand;
  const there = byHand ? `; take roster's access away at ${byHand}` : "";
  switch (outcome.kind) {
    case "not-oauth":
      return undefined;
    case "revoked":
      return { ok: true, line: `signed out: its tokens were revoked at ${outcome.at}` };
    case "no-endpoint":
      return {
        ok: true,
        line: `the provider has no revocation endpoint, so its tokens stay valid there until they expire${there}`,
      };
    case "failed":
      return {
        ok: false,
        line: `could not revoke its tokens at the provider (${outcome.reason}): they stay valid there until they expire${there}`,
      };
  }
}
