import type { IncomingMessage } from "node:http";
import { type Static, Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import type { Upstreams } from "./upstreams.ts";

/**
 * One OAuth 2.0 refresh (RFC 6749 §6): a form POST of the refresh token to
 * the credential's token endpoint, sent by the gateway itself through its own
 * upstream pools — the same TLS verification and `resolve` answers as any
 * upstream, and no box rule, since no box asked for it. The endpoint is the
 * operator's (written in the vault, out of any box's reach), so it may be an
 * internal address on purpose, as a grant naming its host exactly may.
 * Failures are thrown as TokenRefusal, whose message names what went wrong
 * and never carries a token.
 */
export interface RefreshRequest {
  tokenUrl: URL;
  refreshToken: string;
  clientId?: string;
  clientSecret?: string;
}

/** What the endpoint granted: a new access token, maybe a rotated refresh token, maybe a lifetime. */
export interface Granted {
  access: string;
  refresh?: string;
  expiresInSecs?: number;
}

export class TokenRefusal extends Error {
  override name = "TokenRefusal";
}

const TokenReply = Type.Object({
  access_token: Type.String({ minLength: 1 }),
  refresh_token: Type.Optional(Type.String({ minLength: 1 })),
  expires_in: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
});
type TokenReply = Static<typeof TokenReply>;

/** A token endpoint's answer is a small JSON object; anything longer is not one. */
const MAX_REPLY_BYTES = 64 * 1024;

export async function refreshAccessToken(
  upstreams: Upstreams,
  request: RefreshRequest,
): Promise<Granted> {
  const { tokenUrl } = request;
  const form = new URLSearchParams({
    grant_type: "refresh_token",
    refresh_token: request.refreshToken,
  });
  // client credentials in the body (RFC 6749 §2.3.1): what public clients and most providers take
  if (request.clientId) form.set("client_id", request.clientId);
  if (request.clientSecret) form.set("client_secret", request.clientSecret);
  const body = Buffer.from(form.toString(), "utf8");
  let response: IncomingMessage;
  try {
    const reply = await upstreams.send(
      {
        protocol: "https",
        host: tokenUrl.hostname.replace(/^\[|\]$/g, ""),
        port: Number(tokenUrl.port || 443),
      },
      true,
      {
        method: "POST",
        path: `${tokenUrl.pathname}${tokenUrl.search}`,
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          accept: "application/json",
          "content-length": String(body.length),
        },
        body,
      },
    );
    if (reply.kind !== "response") {
      reply.socket.destroy();
      throw new TokenRefusal(`the token endpoint ${tokenUrl.host} answered with an upgrade`);
    }
    response = reply.response;
  } catch (error) {
    if (error instanceof TokenRefusal) throw error;
    const detail = error instanceof Error ? error.message : String(error);
    throw new TokenRefusal(`the token endpoint ${tokenUrl.host} could not be reached (${detail})`);
  }
  const text = await readReply(response, upstreams.options.bodyIdleTimeoutMs, tokenUrl.host);
  const status = response.statusCode ?? 0;
  const parsed = parseJson(text);
  if (status !== 200) throw new TokenRefusal(endpointError(tokenUrl.host, status, parsed));
  if (!Value.Check(TokenReply, parsed))
    throw new TokenRefusal(
      `the token endpoint ${tokenUrl.host} answered 200 without an access_token (and, if any, a numeric expires_in)`,
    );
  const reply: TokenReply = parsed;
  return {
    access: reply.access_token,
    ...(reply.refresh_token ? { refresh: reply.refresh_token } : {}),
    ...(reply.expires_in !== undefined ? { expiresInSecs: reply.expires_in } : {}),
  };
}

/** The endpoint's own words (RFC 6749 §5.2 `error`, `error_description`), short. */
function endpointError(host: string, status: number, parsed: unknown): string {
  const fields =
    typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>) : {};
  const code = typeof fields.error === "string" ? ` ${fields.error}` : "";
  const description =
    typeof fields.error_description === "string"
      ? ` (${fields.error_description.slice(0, 200)})`
      : "";
  return `the token endpoint ${host} answered ${status}${code}${description}`;
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
      reject(new TokenRefusal(`the token endpoint ${host} ${reason}`));
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
