import { createInterface } from "node:readline";
import {
  type Granted,
  type OAuthClient,
  requestTokens,
  TokenRefusal,
} from "../../../boundary/gateway/credentials/token-endpoint.ts";
import { readCredential } from "../../../boundary/gateway/credentials/vault.ts";
import { resolveTimeouts } from "../../../boundary/gateway/settings/defaults.ts";
import { ClosedPorts } from "../../../boundary/gateway/upstream/closed-ports.ts";
import { upstreamsFor } from "../../../boundary/gateway/upstream/pools.ts";
import type { LoadedConfig } from "../../../ground/config/load.ts";
import { RosterError } from "../../../ground/errors.ts";
import type { ConnectionState } from "../connection-state.ts";
import type { Recipe } from "../recipes.ts";
import { deviceSignIn } from "./device.ts";
import { type Endpoints, endpointsFor, type OAuthFlags } from "./endpoints.ts";
import { type Loopback, openLoopback } from "./loopback.ts";
import { newPkce, newState } from "./pkce.ts";

/**
 * `connection add … --oauth`: consent instead of a pasted key. The scopes are
 * shown before anything is asked; then either the authorization-code flow
 * with PKCE through a loopback redirect on this host, or (--device) the
 * device flow. The host speaks to the provider through the gateway's own
 * upstream pools (org.toml's `[gateway] resolve` and `upstream_ca`), the
 * same way the gateway will refresh the token later. What comes back is the
 * vault credential the gateway's refresh already understands (gateway/credentials/inject.ts),
 * with the scopes granted recorded beside it.
 */
export interface SignedIn {
  /** The vault credential: tokens, expiry, endpoints, client, scopes. */
  credential: Record<string, string | number>;
  endpoints: Endpoints;
  scopes: string[];
  /** What `connection ls` and `rm` say of it: the scopes granted, never a token. */
  state: NonNullable<ConnectionState["oauth"]>;
}

/** How long a loopback sign-in waits for the person's consent. */
const CONSENT_WAIT_MS = 10 * 60_000;

export async function signIn(
  config: Pick<LoadedConfig, "org">,
  name: string,
  recipe: Recipe,
  flags: OAuthFlags & { clientSecret?: string },
  say: (line: string) => void,
  /** Where the parent proxy's credential (`[gateway] upstream_proxy_auth`) is read from. */
  vaultDir?: string,
): Promise<SignedIn> {
  if (recipe.kind !== "service")
    throw new RosterError(
      `--oauth signs in to an API; recipe "${recipe.name}" is a ${recipe.kind}`,
      {
        exitCode: 2,
      },
    );
  const section = config.org.gateway ?? {};
  const upstreams = upstreamsFor(
    section,
    resolveTimeouts(section.timeouts),
    ClosedPorts.forConfig(config.org),
    (credentialName) => (vaultDir ? readCredential(vaultDir, credentialName) : undefined),
  );
  try {
    const endpoints = await endpointsFor(recipe, flags, upstreams);
    const clientId = flags.clientId;
    if (!clientId)
      throw new RosterError(
        `--oauth needs --client-id: the id the provider gave roster when you registered it${endpoints.registerAt ? ` (${endpoints.registerAt})` : ""}`,
        { exitCode: 2 },
      );
    const client: OAuthClient = {
      id: clientId,
      ...(flags.clientSecret ? { secret: flags.clientSecret } : {}),
      auth: endpoints.clientAuth,
    };
    const at = (endpoints.authorize ?? endpoints.token).host;
    say(
      `signing "${name}" in at ${at}; scopes asked for: ${endpoints.scopes.length ? endpoints.scopes.join(" ") : "(none: the provider's default)"}`,
    );
    let granted: Granted;
    if (flags.device) {
      if (!endpoints.device)
        throw new RosterError(
          `${at} has no device flow here (no device authorization endpoint${recipe.oauth ? " in the recipe" : "; --device-url names one"}); sign in without --device`,
          { exitCode: 2 },
        );
      granted = await deviceSignIn(upstreams, {
        deviceUrl: endpoints.device,
        tokenUrl: endpoints.token,
        scopes: endpoints.scopes,
        client,
        say,
      });
    } else granted = await codeSignIn(endpoints, client, flags, upstreams, say);
    return signedIn(endpoints, client, granted, say);
  } finally {
    await upstreams.close();
  }
}

/** The authorization-code flow with PKCE, answered at a loopback redirect. */
async function codeSignIn(
  endpoints: Endpoints,
  client: OAuthClient,
  flags: OAuthFlags,
  upstreams: Parameters<typeof requestTokens>[0],
  say: (line: string) => void,
): Promise<Granted> {
  const { authorize } = endpoints;
  if (!authorize)
    throw new RosterError(
      "the provider has no authorization endpoint here; sign in with --device",
      {
        exitCode: 2,
      },
    );
  const port = flags.callbackPort === undefined ? undefined : Number(flags.callbackPort);
  if (port !== undefined && !(Number.isInteger(port) && port > 0 && port < 65536))
    throw new RosterError(`--callback-port ${flags.callbackPort}: a port number`, { exitCode: 2 });
  const state = newState();
  const pkce = newPkce();
  const loopback = await openLoopback({
    state,
    ...(endpoints.issuer ? { issuer: endpoints.issuer } : {}),
    ...(port !== undefined ? { port } : {}),
    waitMs: CONSENT_WAIT_MS,
    ignored: say,
  });
  try {
    const link = new URL(authorize);
    const query = link.searchParams;
    query.set("response_type", "code");
    query.set("client_id", client.id ?? "");
    query.set("redirect_uri", loopback.redirectUri);
    if (endpoints.scopes.length) query.set("scope", endpoints.scopes.join(" "));
    query.set("state", state);
    query.set("code_challenge", pkce.challenge);
    query.set("code_challenge_method", pkce.method);
    // OpenID Connect grants offline_access only on a fresh consent (Core §11)
    if (endpoints.scopes.includes("offline_access")) query.set("prompt", "consent");
    for (const [key, value] of Object.entries(endpoints.params)) query.set(key, value);
    say(`open this link in a browser on this machine, and consent:\n  ${link.href}`);
    say(`waiting for the answer at ${loopback.redirectUri} …`);
    const stop = process.stdin.isTTY ? takePasted(loopback, say) : undefined;
    const code = await loopback.code.finally(() => stop?.());
    return await requestTokens(
      upstreams,
      endpoints.token,
      {
        grant_type: "authorization_code",
        code,
        redirect_uri: loopback.redirectUri,
        code_verifier: pkce.verifier,
      },
      client,
    ).catch((error: unknown) => {
      if (error instanceof TokenRefusal)
        throw new RosterError(`the code exchange failed: ${error.message}; nothing was stored`, {
          exitCode: 1,
        });
      throw error;
    });
  } finally {
    loopback.close();
  }
}

/**
 * A browser on another machine (this host has none, or is reached by ssh)
 * ends at the loopback address it can't open: the person pastes that address
 * here, and it is judged like one that arrived. Returns the stop.
 */
function takePasted(loopback: Loopback, say: (line: string) => void): () => void {
  say("(a browser on another machine: paste here the address it ended at)");
  const lines = createInterface({ input: process.stdin, terminal: false });
  lines.on("line", (line) => {
    let query: URLSearchParams | undefined;
    try {
      query = new URL(line.trim()).searchParams;
    } catch {
      query = undefined;
    }
    const why = query
      ? loopback.pasted(query)
      : "that is not the address the browser ended at (it carries no code, state or error)";
    if (why) say(why);
  });
  return () => lines.close();
}

/** The vault credential from what was granted, and a word on anything less than asked. */
function signedIn(
  endpoints: Endpoints,
  client: OAuthClient,
  granted: Granted,
  say: (line: string) => void,
): SignedIn {
  const scopes =
    granted.scope !== undefined ? granted.scope.split(" ").filter(Boolean) : endpoints.scopes;
  const missing = endpoints.scopes.filter((scope) => !scopes.includes(scope));
  if (missing.length) say(`the provider granted less than asked: not ${missing.join(" ")}`);
  const expires =
    granted.expiresInSecs !== undefined
      ? Date.now() + Math.round(granted.expiresInSecs * 1000)
      : undefined;
  if (!granted.refresh)
    say(
      `the provider gave no refresh token: when the access token expires${expires ? ` (${new Date(expires).toISOString()})` : ""}, sign in again`,
    );
  const credential: Record<string, string | number> = {
    access: granted.access,
    ...(granted.refresh ? { refresh: granted.refresh } : {}),
    ...(expires !== undefined ? { expires } : {}),
    token_url: endpoints.token.href,
    ...(client.id !== undefined ? { client_id: client.id } : {}),
    ...(client.secret !== undefined ? { client_secret: client.secret } : {}),
    ...(client.auth === "basic" ? { client_auth: "basic" } : {}),
    ...(endpoints.revoke ? { revoke_url: endpoints.revoke.href } : {}),
    scope: scopes.join(" "),
    signed_in: new Date().toISOString(),
  };
  const state = {
    scopes,
    signed_in: String(credential.signed_in),
    ...(endpoints.revokeByHand ? { revoke_by_hand: endpoints.revokeByHand } : {}),
  };
  return { credential, endpoints, scopes, state };
}
