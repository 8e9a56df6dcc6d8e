import type { IncomingMessage } from "node:http";
import { type Static, Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import type { Upstreams } from "../upstream/pools.ts";

/**
 * OAuth 2.0's form endpoints — the token endpoint (RFC 6749 §3.2), device
 * authorization (RFC 8628) and revocation (RFC 7009) — spoken by the host
 * itself through the gateway's upstream pools: the same TLS verification and
 * `resolve` answers as any upstream, and no box rule, since no box asked. The
 * endpoints are the operator's (written in the vault or typed at sign-in, out
 * of any box's reach), so they may be internal addresses on purpose, as a
 * grant naming its host exactly may. Failures are thrown as TokenRefusal,
 * whose message names what went wrong and never carries a token.
 */
export interface OAuthClient {
  id?: string;
  secret?: string;
  /** How the client authenticates: in the form (RFC 6749 §2.3.1, the default) or HTTP Basic. */
  auth?: "body" | "basic";
}

export interface RefreshRequest {
  tokenUrl: URL;
  refreshToken: string;
  client: OAuthClient;
}

/** What the endpoint granted: a new access token, maybe a refresh token, a lifetime and the scopes. */
export interface Granted {
  access: string;
  refresh?: string;
  expiresInSecs?: number;
  /** The scopes granted, space-separated, when the endpoint says (it may grant fewer than asked). */
  scope?: string;
}

export class TokenRefusal extends Error {
  override name = "TokenRefusal";
  /** The endpoint's own `error` code (RFC 6749 §5.2), when it gave one. */
  readonly code: string | undefined;
  constructor(message: string, code?: string) {
    super(message);
    this.code = code;
  }
}

const TokenReply = Type.Object({
  access_token: Type.String({ minLength: 1 }),
  refresh_token: Type.Optional(Type.String({ minLength: 1 })),
  expires_in: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
  scope: Type.Optional(Type.String()),
});
type TokenReply = Static<typeof TokenReply>;

/** An endpoint's answer is a small JSON object; anything longer is not one. */
const MAX_REPLY_BYTES = 64 * 1024;

/** One refresh (RFC 6749 §6). */
export function refreshAccessToken(
  upstreams: Upstreams,
  request: RefreshRequest,
): Promise<Granted> {
  return requestTokens(
    upstreams,
    request.tokenUrl,
    { grant_type: "refresh_token", refresh_token: request.refreshToken },
    request.client,
  );
}

/** Any grant at the token endpoint (a refresh, an authorization code, a device code): its tokens. */
export async function requestTokens(
  upstreams: Upstreams,
  tokenUrl: URL,
  fields: Record<string, string>,
  client: OAuthClient,
): Promise<Granted> {
  const answer = await postForm(upstreams, tokenUrl, fields, client);
  if (answer.status !== 200) throw endpointRefusal(tokenUrl, answer);
  if (!Value.Check(TokenReply, answer.json))
    throw new TokenRefusal(
      `the token endpoint ${tokenUrl.host} answered 200 without an access_token (and, if any, a numeric expires_in)`,
    );
  const reply: TokenReply = answer.json;
  return {
    access: reply.access_token,
    ...(reply.refresh_token ? { refresh: reply.refresh_token } : {}),
    ...(reply.expires_in !== undefined ? { expiresInSecs: reply.expires_in } : {}),
    ...(reply.scope !== undefined ? { scope: reply.scope } : {}),
  };
}

export interface FormAnswer {
  status: number;
  /** The body as JSON, or undefined when it was not JSON. */
  json: unknown;
}

/** One form POST to an OAuth endpoint, with the client's authentication; the answer read whole, bounded. */
export async function postForm(
  upstreams: Upstreams,
  url: URL,
  fields: Record<string, string>,
  client: OAuthClient,
): Promise<FormAnswer> {
  const form = new URLSearchParams(fields);
  const headers: Record<string, string> = {
    "content-type": "application/x-www-form-urlencoded",
    accept: "application/json",
  };
  if (client.auth === "basic" && client.id !== undefined) {
    // RFC 6749 §2.3.1: each part form-encoded before the Basic pair
    const pair = `${encodeURIComponent(client.id)}:${encodeURIComponent(client.secret ?? "")}`;
    headers.authorization = `Basic ${Buffer.from(pair, "utf8").toString("base64")}`;
  } else {
    if (client.id !== undefined) form.set("client_id", client.id);
    if (client.secret !== undefined) form.set("client_secret", client.secret);
  }
  const body = Buffer.from(form.toString(), "utf8");
  headers["content-length"] = String(body.length);
  return exchange(upstreams, url, "POST", headers, body);
}

/** One GET of an OAuth metadata document (RFC 8414, OpenID discovery): its JSON, bounded. */
export function getJson(upstreams: Upstreams, url: URL): Promise<FormAnswer> {
  return exchange(upstreams, url, "GET", { accept: "application/json" }, undefined);
}

async function exchange(
  upstreams: Upstreams,
  url: URL,
  method: "GET" | "POST",
  headers: Record<string, string>,
  body: Buffer | undefined,
): Promise<FormAnswer> {
  let response: IncomingMessage;
  try {
    const reply = await upstreams.send(
      {
        protocol: "https",
        host: url.hostname.replace(/^\[|\]$/g, ""),
        port: Number(url.port || 443),
      },
      true,
      { method, path: `${url.pathname}${url.search}`, headers, body },
    );
    if (reply.kind !== "response") {
      reply.socket.destroy();
      throw new TokenRefusal(`the endpoint ${url.host} answered with an upgrade`);
    }
    response = reply.response;
  } catch (error) {
    if (error instanceof TokenRefusal) throw error;
    const detail = error instanceof Error ? error.message : String(error);
    throw new TokenRefusal(`the endpoint ${url.host} could not be reached (${detail})`);
  }
  const text = await readReply(response, upstreams.options.bodyIdleTimeoutMs, url.host);
  return { status: response.statusCode ?? 0, json: parseJson(text) };
}

/** The endpoint's own words (RFC 6749 §5.2 `error`, `error_description`), short. */
export function endpointRefusal(url: URL, answer: FormAnswer): TokenRefusal {
  const fields =
    typeof answer.json === "object" && answer.json !== null
      ? (answer.json as Record<string, unknown>)
      : {};
  const code = typeof fields.error === "string" ? fields.error.slice(0, 64) : undefined;
  const description =
    typeof fields.error_description === "string"
      ? ` (${fields.error_description.slice(0, 200)})`
      : "";
  return new TokenRefusal(
    `the endpoint ${url.host} answered ${answer.status}${code ? ` ${code}` : ""}${description}`,
    code,
  );
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function readReply(response: IncomingMessage, timeoutMs: number, host: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const fail = (reason: string) => {
      clearTimeout(timer);
      response.destroy();
      reject(new TokenRefusal(`the endpoint ${host} ${reason}`));
    };
    const timer = setTimeout(() => fail("did not finish its answer in time"), timeoutMs);
    response.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_REPLY_BYTES) return fail(`answered more than ${MAX_REPLY_BYTES} bytes`);
      chunks.push(chunk);
    });
    response.once("error", (error) => fail(`broke off its answer (${error.message})`));
    response.once("end", () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString("utf8"));
    });
  });
}
