import { getJson } from "../../../boundary/gateway/credentials/token-endpoint.ts";
import type { Upstreams } from "../../../boundary/gateway/upstream/pools.ts";
import { RosterError } from "../../../ground/errors.ts";
import type { OAuthRecipe, Recipe } from "../recipes.ts";

/**
 * Where a sign-in goes: the recipe's endpoints, or — with `--declare` — the
 * ones the person names for any provider, read from its discovery document
 * (`--issuer`, OpenID discovery or RFC 8414) and/or given one by one. Every
 * endpoint is https: a code, a token or a client secret never crosses the
 * network in the clear.
 */
export interface OAuthFlags {
  oauth?: boolean;
  device?: boolean;
  declare?: boolean;
  issuer?: string;
  authorizeUrl?: string;
  tokenUrl?: string;
  deviceUrl?: string;
  revokeUrl?: string;
  scope?: string[];
  clientId?: string;
  clientSecretEnv?: string;
  callbackPort?: string;
}

export interface Endpoints {
  /** The provider's issuer, when known: a redirect naming another (RFC 9207 `iss`) is refused. */
  issuer?: string;
  authorize?: URL;
  token: URL;
  device?: URL;
  revoke?: URL;
  revokeByHand?: string;
  scopes: string[];
  params: Record<string, string>;
  clientAuth: "body" | "basic";
  inject: { header: string; value: string };
  registerAt?: string;
}

const BEARER = { header: "authorization", value: "Bearer {access}" };

export async function endpointsFor(
  recipe: Recipe,
  flags: OAuthFlags,
  upstreams: Upstreams,
): Promise<Endpoints> {
  const declared = flags.declare ? await declaredRecipe(flags, upstreams) : undefined;
  const oauth = declared ?? recipe.oauth;
  if (!oauth)
    throw new RosterError(
      `recipe "${recipe.name}" has no OAuth sign-in; --declare with --issuer, or --authorize-url and --token-url, names any provider's`,
      { exitCode: 2 },
    );
  const scopes = flags.scope?.length ? splitScopes(flags.scope) : oauth.scopes;
  return {
    ...(declared?.issuer ? { issuer: declared.issuer } : {}),
    ...(oauth.authorizeUrl ? { authorize: httpsUrl(oauth.authorizeUrl, "--authorize-url") } : {}),
    token: httpsUrl(oauth.tokenUrl, "--token-url"),
    ...(oauth.deviceUrl ? { device: httpsUrl(oauth.deviceUrl, "--device-url") } : {}),
    ...(oauth.revokeUrl ? { revoke: httpsUrl(oauth.revokeUrl, "--revoke-url") } : {}),
    ...(oauth.revokeByHand ? { revokeByHand: oauth.revokeByHand } : {}),
    scopes,
    params: oauth.params ?? {},
    clientAuth: oauth.clientAuth ?? "body",
    inject: oauth.inject ?? recipe.oauth?.inject ?? BEARER,
    ...(oauth.registerAt ? { registerAt: oauth.registerAt } : {}),
  };
}

/** `--scope a --scope b`, `--scope "a b"` and `--scope a,b` all ask for a and b. */
function splitScopes(given: string[]): string[] {
  return [...new Set(given.flatMap((one) => one.split(/[\s,]+/)).filter(Boolean))];
}

type Declared = Omit<OAuthRecipe, "authorizeUrl" | "registerAt"> & {
  authorizeUrl?: string;
  issuer?: string;
  registerAt?: string;
};

/** The provider as `--declare` names it: discovery first, each explicit URL over what it found. */
async function declaredRecipe(flags: OAuthFlags, upstreams: Upstreams): Promise<Declared> {
  const found = flags.issuer ? await discover(flags.issuer, upstreams) : {};
  const authorizeUrl = flags.authorizeUrl ?? found.authorization_endpoint;
  const tokenUrl = flags.tokenUrl ?? found.token_endpoint;
  const deviceUrl = flags.deviceUrl ?? found.device_authorization_endpoint;
  const revokeUrl = flags.revokeUrl ?? found.revocation_endpoint;
  if (!tokenUrl || (!authorizeUrl && !(flags.device && deviceUrl)))
    throw new RosterError(
      `--declare needs the provider's endpoints: --issuer <https://…> (read from its discovery document), or --authorize-url and --token-url${flags.issuer ? ` (the discovery document of ${flags.issuer} named no ${tokenUrl ? "authorization_endpoint" : "token_endpoint"})` : ""}`,
      { exitCode: 2 },
    );
  return {
    ...(flags.issuer ? { issuer: flags.issuer } : {}),
    ...(authorizeUrl ? { authorizeUrl } : {}),
    tokenUrl,
    ...(deviceUrl ? { deviceUrl } : {}),
    ...(revokeUrl ? { revokeUrl } : {}),
    scopes: [],
  };
}

interface Discovered {
  authorization_endpoint?: string;
  token_endpoint?: string;
  device_authorization_endpoint?: string;
  revocation_endpoint?: string;
}

/** The issuer's metadata: OpenID discovery, else RFC 8414's; its `issuer` must be the one asked for. */
async function discover(issuer: string, upstreams: Upstreams): Promise<Discovered> {
  const base = httpsUrl(issuer, "--issuer");
  const trimmed = base.pathname.replace(/\/$/, "");
  const places = [
    new URL(`${base.origin}${trimmed}/.well-known/openid-configuration`),
    new URL(`${base.origin}/.well-known/oauth-authorization-server${trimmed}`),
  ];
  const problems: string[] = [];
  for (const place of places) {
    const answer = await getJson(upstreams, place).catch((error: unknown) => {
      problems.push(error instanceof Error ? error.message : String(error));
      return undefined;
    });
    if (!answer) continue;
    if (answer.status !== 200 || typeof answer.json !== "object" || answer.json === null) {
      problems.push(`${place.pathname} answered ${answer.status}`);
      continue;
    }
    const fields = answer.json as Record<string, unknown>;
    if (fields.issuer !== issuer)
      throw new RosterError(
        `--issuer ${issuer}: its discovery document names the issuer ${JSON.stringify(fields.issuer)}, not this one (RFC 8414 §3.3); nothing was asked`,
        { exitCode: 2 },
      );
    const text = (key: keyof Discovered) =>
      typeof fields[key] === "string" ? { [key]: fields[key] } : {};
    return {
      ...text("authorization_endpoint"),
      ...text("token_endpoint"),
      ...text("device_authorization_endpoint"),
      ...text("revocation_endpoint"),
    };
  }
  throw new RosterError(`--issuer ${issuer}: no discovery document (${problems.join("; ")})`, {
    exitCode: 2,
    hint: "name the endpoints with --authorize-url and --token-url instead",
  });
}

function httpsUrl(value: string, flag: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new RosterError(`${flag} ${value}: not a URL`, { exitCode: 2 });
  }
  if (url.protocol !== "https:")
    throw new RosterError(`${flag} ${value}: must be https:// (codes and tokens cross it)`, {
      exitCode: 2,
    });
  return url;
}
