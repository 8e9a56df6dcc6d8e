/**
 * A test double for a provider's OAuth 2.0 authorization server, speaking the
 * real protocol because it is the real thing: @node-oauth/oauth2-server (a
 * maintained RFC 6749 implementation) behind an HTTPS server, with an
 * in-memory store. POST /token answers the refresh_token grant exactly as the
 * library does (rotating the refresh token, revoking the old one); GET /api/*
 * is a protected resource that checks the bearer access token with the
 * library's own authenticate(), so a stale or unknown token gets its 401.
 * Tests count the token requests, revoke refresh tokens, and may hold or
 * watch a token answer (to kill a gateway in the middle of one).
 */
import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import OAuth2Server from "@node-oauth/oauth2-server";
import { makeServerCertificate, type TestCertificate } from "./test-ca.ts";

export const CLIENT = { id: "roster-test", secret: "client-secret-xyz" };

interface Stored {
  accessToken: string;
  accessTokenExpiresAt: Date;
  refreshToken?: string;
  refreshTokenExpiresAt?: Date;
  client: OAuth2Server.Client;
  user: OAuth2Server.User;
}

export interface IssuedTokens {
  access: string;
  refresh: string;
  /** ms since the epoch, as the vault keeps it. */
  expires: number;
}

export class OAuthServer {
  /** POST /token requests received (the refresh_token grant, answered or not). */
  tokenRequests = 0;
  /** Bearer tokens the protected resource accepted, in order. */
  readonly served: string[] = [];
  /** Called once a token answer has been written (the kill test's trigger). */
  onTokenAnswered: (() => void) | undefined;
  private readonly tokens: Stored[] = [];
  private readonly oauth: OAuth2Server;
  private readonly client: OAuth2Server.Client = {
    id: CLIENT.id,
    grants: ["refresh_token"],
    accessTokenLifetime: 3600,
    refreshTokenLifetime: 14 * 86_400,
  };

  private constructor(
    readonly server: Server,
    readonly certificate: TestCertificate,
  ) {
    const model: OAuth2Server.RefreshTokenModel = {
      getClient: async (id, secret) =>
        id === CLIENT.id && (secret === undefined || secret === CLIENT.secret)
          ? this.client
          : false,
      saveToken: async (token, client, user) => {
        const stored: Stored = {
          accessToken: token.accessToken,
          accessTokenExpiresAt: token.accessTokenExpiresAt ?? new Date(Date.now() + 3600_000),
          ...(token.refreshToken ? { refreshToken: token.refreshToken } : {}),
          ...(token.refreshTokenExpiresAt
            ? { refreshTokenExpiresAt: token.refreshTokenExpiresAt }
            : {}),
          client,
          user,
        };
        this.tokens.push(stored);
        return stored;
      },
      getAccessToken: async (accessToken) =>
        this.tokens.find((token) => token.accessToken === accessToken) ?? false,
      getRefreshToken: async (refreshToken) => {
        const token = this.tokens.find((stored) => stored.refreshToken === refreshToken);
        return token?.refreshToken
          ? {
              refreshToken: token.refreshToken,
              ...(token.refreshTokenExpiresAt
                ? { refreshTokenExpiresAt: token.refreshTokenExpiresAt }
                : {}),
              client: token.client,
              user: token.user,
            }
          : false;
      },
      revokeToken: async (token) => this.revoke(token.refreshToken),
    };
    this.oauth = new OAuth2Server({ model });
  }

  static async start(names: string[]): Promise<OAuthServer> {
    const certificate = await makeServerCertificate(names);
    let self: OAuthServer | undefined;
    const server = createServer(
      { key: certificate.keyPem, cert: certificate.certPem },
      (req, res) => {
        void self?.handle(req, res);
      },
    );
    self = new OAuthServer(server, certificate);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return self;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** Tokens as if the operator had just signed in: an access token living `lifetimeMs`. */
  async issue(lifetimeMs: number): Promise<IssuedTokens> {
    const expires = Date.now() + lifetimeMs;
    const access = randomBytes(16).toString("hex");
    const refresh = randomBytes(16).toString("hex");
    this.tokens.push({
      accessToken: access,
      accessTokenExpiresAt: new Date(expires),
      refreshToken: refresh,
      refreshTokenExpiresAt: new Date(Date.now() + 86_400_000),
      client: this.client,
      user: { id: "operator" },
    });
    return { access, refresh, expires };
  }

  /** The provider forgets a refresh token (the user revoked the app, an admin rotated it). */
  revoke(refreshToken: string | undefined): boolean {
    const token = this.tokens.find((stored) => stored.refreshToken === refreshToken);
    if (!token) return false;
    delete token.refreshToken;
    delete token.refreshTokenExpiresAt;
    return true;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? "/", "https://oauth.test");
    const request = new OAuth2Server.Request({
      method: req.method ?? "GET",
      headers: Object.fromEntries(
        Object.entries(req.headers).map(([name, value]) => [name, String(value)]),
      ),
      query: Object.fromEntries(url.searchParams),
      body: Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString("utf8"))),
    });
    const response = new OAuth2Server.Response();
    if (url.pathname === "/token" && req.method === "POST") {
      this.tokenRequests += 1;
      try {
        await this.oauth.token(request, response);
        reply(res, response.status ?? 200, response.headers ?? {}, response.body);
      } catch (error) {
        replyError(res, error);
      }
      res.once("finish", () => this.onTokenAnswered?.());
      return;
    }
    if (url.pathname.startsWith("/api/")) {
      try {
        const token = await this.oauth.authenticate(request, response);
        this.served.push(token.accessToken);
        reply(res, 200, {}, { ok: true, path: url.pathname });
      } catch (error) {
        replyError(res, error);
      }
      return;
    }
    reply(res, 404, {}, { error: "not_found" });
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

function reply(
  res: ServerResponse,
  status: number,
  headers: Record<string, string>,
  body: unknown,
): void {
  const text = JSON.stringify(body ?? {});
  res.writeHead(status, { ...headers, "content-type": "application/json" });
  res.end(text);
}

/** The library's errors carry the RFC's status and error code. */
function replyError(res: ServerResponse, error: unknown): void {
  const failed = error as { code?: unknown; name?: unknown; message?: unknown };
  const status = typeof failed.code === "number" ? failed.code : 500;
  reply(
    res,
    status,
    {},
    {
      error: typeof failed.name === "string" ? failed.name : "server_error",
      error_description: typeof failed.message === "string" ? failed.message : String(error),
    },
  );
}
