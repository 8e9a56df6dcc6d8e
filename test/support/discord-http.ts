/**
 * The HTTP vocabulary of the Discord stand-in (discord-stand-in.ts), a TEST
 * DOUBLE for Discord, which can't be reached from here, speaking its real
 * wire protocol: how Discord's API reads requests and words its answers —
 * rate-limit headers, a 429 as Discord sends one, "Invalid Form Body" errors,
 * the history query's validation — and its CDN serving attachment bytes.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import type { StoredAttachment } from "./discord-objects.ts";

/** One HTTP request as it arrived, body parsed. */
export interface DiscordRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

const BUCKET = "d1a2b3c4e5f60718293a4b5c6d7e8f90";
const RESET_AFTER_SECONDS = 1;

/** The request's URL and its JSON body (`{unparsed}` when the body isn't JSON). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export async function readRequest(
  req: IncomingMessage,
): Promise<{ url: URL; body: Record<string, unknown> }> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks).toString("utf8");
  const url = new URL(req.url ?? "/", "http://discord.invalid");
  let body: Record<string, unknown> = {};
  try {
    const parsed: unknown = raw ? JSON.parse(raw) : {};
    if (typeof parsed === "object" && parsed !== null) body = parsed as Record<string, unknown>;
  } catch {
    body = { unparsed: raw };
  }
  return { url, body };
}

export function reply(
  res: ServerResponse,
  status: number,
  payload: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(payload));
}

/** The X-RateLimit-* headers Discord puts on every answer of a route. */
export function limitHeaders(remaining: number): Record<string, string> {
  return {
    "x-ratelimit-limit": "5",
    "x-ratelimit-remaining": String(remaining),
    "x-ratelimit-reset": ((Date.now() + RESET_AFTER_SECONDS * 1000) / 1000).toFixed(3),
    "x-ratelimit-reset-after": RESET_AFTER_SECONDS.toFixed(3),
    "x-ratelimit-bucket": BUCKET,
  };
}

/** A 429 as Discord's rate limiter sends it: Retry-After in whole seconds, the exact wait in the body. */
export function rateLimited(res: ServerResponse, retryAfterSeconds: number): void {
  reply(
    res,
    429,
    { message: "You are being rate limited.", retry_after: retryAfterSeconds, global: false },
    {
      ...limitHeaders(0),
      "x-ratelimit-reset-after": retryAfterSeconds.toFixed(3),
      "retry-after": String(Math.ceil(retryAfterSeconds)),
      "x-ratelimit-scope": "user",
    },
  );
}

export interface FieldError {
  field: string;
  code: string;
  message: string;
}

/**
 * Discord's 400 for a request field it refuses. A dotted field
 * ("components.0.components.1.custom_id") nests the way Discord's error tree
 * does, one object per step down the body; an empty field is the body's own
 * error (`errors._errors`), as for a whole array Discord refuses.
 */
export function invalidFormBody(res: ServerResponse, error: FieldError): void {
  const errors = (error.field ? error.field.split(".") : []).reduceRight<Record<string, unknown>>(
    (inner, key) => ({ [key]: inner }),
    { _errors: [{ code: error.code, message: error.message }] },
  );
  reply(res, 400, { message: "Invalid Form Body", code: 50035, errors });
}

/**
 * What a message body refuses in `content`, as Discord words it. Content may
 * be empty when the message carries other parts (components), as on Discord.
 */
export function contentError(content: string, otherParts = false): FieldError | undefined {
  if (!content.trim() && !otherParts) {
    return { field: "content", code: "BASE_TYPE_REQUIRED", message: "This field is required" };
  }
  if (content.length > 2000) {
    return {
      field: "content",
      code: "BASE_TYPE_MAX_LENGTH",
      message: "Must be 2000 or fewer in length.",
    };
  }
  return undefined;
}

/** GET /channels/:id/messages's query: `limit` 1–100 (default 50) and an optional snowflake cursor. */
export function historyQuery(
  params: URLSearchParams,
): { limit: number; cursor: { after?: bigint; before?: bigint } } | FieldError {
  const limit = params.has("limit") ? Number(params.get("limit")) : 50;
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
    return {
      field: "limit",
      code: "NUMBER_TYPE_MAX",
      message: "int value should be less than or equal to 100.",
    };
  }
  const cursor: { after?: bigint; before?: bigint } = {};
  for (const key of ["after", "before"] as const) {
    const value = params.get(key);
    if (value === null) continue;
    if (!/^[0-9]{1,20}$/.test(value)) {
      return {
        field: key,
        code: "NUMBER_TYPE_COERCE",
        message: `Value "${value}" is not snowflake.`,
      };
    }
    cursor[key] = BigInt(value);
  }
  return { limit, cursor };
}

/**
 * Discord's CDN at /attachments/<channel>/<attachment>/<filename>: no
 * Authorization, but the signed query the attachment URL carried. Returns
 * whether the bytes were served.
 */
export function serveAttachment(
  res: ServerResponse,
  url: URL,
  attachments: ReadonlyMap<string, StoredAttachment>,
): boolean {
  const [, , channel, id, filename] = url.pathname.split("/");
  const stored = id ? attachments.get(id) : undefined;
  if (
    !stored ||
    stored.channelId !== channel ||
    filename === undefined ||
    decodeURIComponent(filename) !== stored.filename ||
    url.searchParams.get("hm") !== stored.signature
  ) {
    res.writeHead(404, { "content-type": "text/plain" });
    res.end("This content is no longer available.");
    return false;
  }
  res.writeHead(200, {
    "content-type": stored.contentType ?? "application/octet-stream",
    "content-length": String(stored.bytes.length),
  });
  res.end(stored.bytes);
  return true;
}
