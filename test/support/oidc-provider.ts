/**
 * A test double for an OAuth 2.0 / OpenID Connect provider, speaking the real
 * protocol because it is the real thing: oidc-provider (an OpenID-certified
 * authorization server) behind an HTTPS server with a test CA. A real sign-in
 * ends at a consent page that needs a person at a browser; here the provider
 * serves the library's own development login and consent pages, and
 * oidc-browser.ts fills them in the way that person would. Everything else — PKCE, the authorization code, refresh-token
 * rotation, revocation, the device flow, userinfo — is the library's own code.
 * Tests count token requests by grant type and ask the library whether a
 * token is still good.
 *
 * Kept quiet on purpose: the library prints notices whenever one of its
 * defaults is used, so TTLs, keys, the store, error and device-flow pages are
 * configured here (the device pages wrap the library's own forms), and the two
 * warnings no setting turns off (the runtime check at import, the dev
 * interactions at start) are dropped while the library loads.
 */
import { generateKeyPairSync } from "node:crypto";
import { writeFile } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { makeServerCertificate } from "./test-ca.ts";

export const CLIENT = { id: "roster-cli", secret: "cli-secret-7f3a" };

const DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";

/** The parts of oidc-provider's token models these tests read. */
interface StoredToken {
  readonly isValid: boolean;
  readonly grantId?: string;
}
interface TokenModel {
  find(value: string): Promise<StoredToken | undefined>;
}
interface KoaContext {
  method: string;
  path: string;
  body: unknown;
  readonly oidc?: { body?: Record<string, unknown> };
}
interface ClientLike {
  readonly clientId: string;
  grantTypeAllowed(grantType: string): boolean;
}
/** The parts of oidc-provider's Provider (a Koa application) used here. */
export interface ProviderInstance {
  readonly issuer: string;
  readonly AccessToken: TokenModel;
  readonly RefreshToken: TokenModel;
  readonly Grant: { find(id: string): Promise<unknown> };
  callback(): (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  use(middleware: (ctx: KoaContext, next: () => Promise<void>) => Promise<void>): unknown;
  pathFor(name: string): string;
  urlFor(name: string): string;
}
type ProviderClass = new (issuer: string, configuration: object) => ProviderInstance;
type MemoryModule = { createMemoryAdapter(clockTolerance: number): unknown };

export interface OidcProvider {
  issuer: string;
  /** The test CA's PEM, written to disk for whatever must trust the provider. */
  caFile: string;
  port: number;
  address: string;
  /** The protected resource: the userinfo endpoint ("/me" in oidc-provider v9). */
  userinfoPath: string;
  provider: ProviderInstance;
  /** POSTs to the token endpoint, by grant_type ("(none)" when the body had none). */
  tokenRequests: Record<string, number>;
  accessValid(token: string): Promise<boolean>;
  refreshValid(token: string): Promise<boolean>;
  stop(): Promise<void>;
}

/** The library's warnings that no setting turns off; anything else still prints. */
const UNAVOIDABLE = [
  "oidc-provider WARNING: Unsupported runtime",
  "oidc-provider WARNING: a quick start development-only feature devInteractions",
];

async function quietly<T>(load: () => Promise<T> | T): Promise<T> {
  const warn = console.warn;
  console.warn = (...args: unknown[]) => {
    const text = String(args[0]);
    if (!UNAVOIDABLE.some((prefix) => text.includes(prefix))) warn(...args);
  };
  try {
    return await load();
  } finally {
    console.warn = warn;
  }
}

function page(title: string, body: string): string {
  return `<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>${title}</title></head>\n<body><h1>${title}</h1>\n${body}\n</body></html>`;
}

function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

/** The user-code page's line, in the library's own words (its default page). */
function inputMessage(error: { name?: string; userCode?: string } | undefined): string {
  if (error && (error.userCode || error.name === "NoCodeError")) {
    return "The code you entered is incorrect. Try again";
  }
  if (error?.name === "AbortedError") return "The Sign-in request was interrupted";
  if (error) return "There was an error processing your request";
  return "Enter the code displayed on your device";
}

function configuration(accessTtlSecs: number, adapter: unknown): object {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  return {
    adapter,
    clients: [
      {
        client_id: CLIENT.id,
        client_secret: CLIENT.secret,
        token_endpoint_auth_method: "client_secret_post",
        application_type: "native",
        // oidc-provider lets a native client's http loopback redirect use any port
        redirect_uris: ["http://127.0.0.1/callback"],
        grant_types: ["authorization_code", "refresh_token", DEVICE_CODE_GRANT],
        response_types: ["code"],
      },
    ],
    responseTypes: ["code"],
    // S256 is the only method oidc-provider v9 accepts; this makes PKCE mandatory
    pkce: { required: () => true },
    scopes: ["openid", "offline_access", "profile", "crm.read"],
    claims: { openid: ["sub"], profile: ["name"] },
    findAccount: async (_ctx: unknown, id: string) => ({
      accountId: id,
      claims: async () => ({ sub: id, name: `Operator ${id}` }),
    }),
    issueRefreshToken: async (_ctx: unknown, client: ClientLike) =>
      client.grantTypeAllowed("refresh_token"),
    rotateRefreshToken: true,
    // expiry exactly when the TTL says (the default tolerates 15 s)
    clockTolerance: 0,
    cookies: { keys: ["oidc-test-cookie-key-1", "oidc-test-cookie-key-2"] },
    jwks: { keys: [{ ...privateKey.export({ format: "jwk" }), use: "sig" }] },
    ttl: {
      AccessToken: accessTtlSecs,
      AuthorizationCode: 60,
      DeviceCode: 600,
      IdToken: 3600,
      RefreshToken: 14 * 86_400,
      Interaction: 3600,
      Session: 14 * 86_400,
      Grant: 14 * 86_400,
    },
    renderError: async (ctx: KoaContext, out: Record<string, unknown>) => {
      const lines = Object.entries(out).map(
        ([key, value]) => `<pre>${key}: ${escapeHtml(value)}</pre>`,
      );
      ctx.body = page("oops! something went wrong", lines.join("\n"));
    },
    features: {
      devInteractions: { enabled: true },
      revocation: {
        enabled: true,
        allowedPolicy: async (_ctx: unknown, client: ClientLike, token: { clientId?: string }) =>
          token.clientId === client.clientId,
      },
      introspection: { enabled: true, allowedPolicy: async () => true },
      userinfo: { enabled: true },
      deviceFlow: {
        enabled: true,
        userCodeInputSource: async (
          ctx: KoaContext,
          form: string,
          _out: unknown,
          error?: { name?: string; userCode?: string },
        ) => {
          ctx.body = page(
            "Sign-in",
            `<p>${inputMessage(error)}</p>\n${form}\n<button type="submit" form="op.deviceInputForm">Continue</button>`,
          );
        },
        userCodeConfirmSource: async (
          ctx: KoaContext,
          form: string,
          _client: unknown,
          _deviceInfo: unknown,
          userCode: string,
        ) => {
          ctx.body = page(
            "Confirm Device",
            `<p><code>${escapeHtml(userCode)}</code></p>\n${form}\n` +
              `<button autofocus type="submit" form="op.deviceConfirmForm">Continue</button>\n` +
              `<button type="submit" form="op.deviceConfirmForm" value="yes" name="abort">[ Abort ]</button>`,
          );
        },
        successSource: async (ctx: KoaContext) => {
          ctx.body = page(
            "Sign-in Success",
            "<p>Your sign-in was successful, you can now close this page.</p>",
          );
        },
      },
    },
  };
}

/** oidc-provider on `address:port` over HTTPS, its issuer `https://<names[0]>[:port]`. */
export async function startOidcProvider(options: {
  names: string[];
  address: string;
  port: number;
  dir: string;
  accessTtlSecs?: number;
}): Promise<OidcProvider> {
  const certificate = await makeServerCertificate(options.names);
  const caFile = join(options.dir, "oidc-ca.pem");
  await writeFile(caFile, certificate.caPem);

  let handle: ((req: IncomingMessage, res: ServerResponse) => Promise<void>) | undefined;
  const server = createServer(
    { key: certificate.keyPem, cert: certificate.certPem },
    (req, res) => {
      if (handle) void handle(req, res);
      else res.writeHead(503).end();
    },
  );
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.address, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const host = options.names[0] ?? options.address;
  const issuer = port === 443 ? `https://${host}` : `https://${host}:${port}`;

  const provider = await quietly(async () => {
    // oidc-provider ships no type declarations; the interfaces above say what is used
    // @ts-expect-error TS7016
    const library: { Provider: ProviderClass } = await import("oidc-provider");
    // the library's own in-memory store, private to this provider (the default one is
    // shared by every provider in the process, and announces itself)
    // @ts-expect-error TS7016
    const memory: MemoryModule = await import("oidc-provider/lib/adapters/memory_adapter.js");
    const adapter = memory.createMemoryAdapter(0);
    return new library.Provider(issuer, configuration(options.accessTtlSecs ?? 3600, adapter));
  });

  const tokenRequests: Record<string, number> = {};
  const tokenPath = provider.pathFor("token");
  provider.use(async (ctx, next) => {
    const counted = ctx.method === "POST" && ctx.path === tokenPath;
    try {
      await next();
    } finally {
      if (counted) {
        const grantType = ctx.oidc?.body?.grant_type;
        const key = typeof grantType === "string" ? grantType : "(none)";
        tokenRequests[key] = (tokenRequests[key] ?? 0) + 1;
      }
    }
  });
  // the device answer names its polling interval, as RFC 8628 lets a provider do: 1 s here,
  // so a test waits for the consent it gives, not out the 5 s default
  const devicePath = provider.pathFor("device_authorization");
  provider.use(async (ctx, next) => {
    await next();
    if (ctx.method === "POST" && ctx.path === devicePath && isRecord(ctx.body))
      ctx.body = { ...ctx.body, interval: 1 };
  });
  handle = provider.callback();

  /** Found, unexpired, unconsumed, and its grant not revoked — as the library judges it. */
  const live = async (model: TokenModel, value: string): Promise<boolean> => {
    const token = await model.find(value);
    if (!token?.isValid) return false;
    return token.grantId === undefined || (await provider.Grant.find(token.grantId)) !== undefined;
  };

  return {
    issuer,
    caFile,
    port,
    address: options.address,
    userinfoPath: provider.pathFor("userinfo"),
    provider,
    tokenRequests,
    accessValid: (token) => live(provider.AccessToken, token),
    refreshValid: (token) => live(provider.RefreshToken, token),
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
