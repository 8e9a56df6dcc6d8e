import { endpointRefusal, postForm } from "../../../boundary/gateway/credentials/token-endpoint.ts";
import { readCredential } from "../../../boundary/gateway/credentials/vault.ts";
import { resolveTimeouts } from "../../../boundary/gateway/settings/defaults.ts";
import { ClosedPorts } from "../../../boundary/gateway/upstream/closed-ports.ts";
import { upstreamsFor } from "../../../boundary/gateway/upstream/pools.ts";
import type { LoadedConfig } from "../../../ground/config/load.ts";

/**
 * Signing out before a connection goes (RFC 7009): its refresh token, then
 * its access token, revoked at the provider's revocation endpoint, so what
 * roster held stops working there too — not only here. A provider without
 * one is named, with where a person takes the access away by hand.
 */
export type SignOut =
  | { kind: "not-oauth" }
  | { kind: "revoked"; at: string }
  | { kind: "no-endpoint" }
  | { kind: "failed"; reason: string };

export async function signOut(
  config: Pick<LoadedConfig, "org">,
  vaultDir: string,
  name: string,
): Promise<SignOut> {
  const credential = readCredential(vaultDir, name);
  if (!credential || typeof credential.token_url !== "string") return { kind: "not-oauth" };
  const where = credential.revoke_url;
  if (typeof where !== "string") return { kind: "no-endpoint" };
  let url: URL;
  try {
    url = new URL(where);
  } catch {
    return { kind: "failed", reason: `revoke_url ${where} is not a URL` };
  }
  if (url.protocol !== "https:") return { kind: "failed", reason: "revoke_url is not https://" };
  const section = config.org.gateway ?? {};
  const upstreams = upstreamsFor(
    section,
    resolveTimeouts(section.timeouts),
    ClosedPorts.forConfig(config.org),
    (credentialName) => readCredential(vaultDir, credentialName),
  );
  const client = {
    ...(typeof credential.client_id === "string" ? { id: credential.client_id } : {}),
    ...(typeof credential.client_secret === "string" ? { secret: credential.client_secret } : {}),
    auth: credential.client_auth === "basic" ? ("basic" as const) : ("body" as const),
  };
  try {
    // the refresh token first: revoking it ends the grant, and most providers its access tokens with it
    for (const hint of ["refresh_token", "access_token"] as const) {
      const token = credential[hint === "refresh_token" ? "refresh" : "access"];
      if (typeof token !== "string") continue;
      const answer = await postForm(upstreams, url, { token, token_type_hint: hint }, client);
      // RFC 7009 §2.2: 200 whether or not the token was still valid
      if (answer.status !== 200)
        return { kind: "failed", reason: endpointRefusal(url, answer).message };
    }
    return { kind: "revoked", at: url.host };
  } catch (error) {
    return { kind: "failed", reason: error instanceof Error ? error.message : String(error) };
  } finally {
    await upstreams.close();
  }
}
