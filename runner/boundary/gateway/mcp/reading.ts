import { MIMEType } from "node:util";
import { brotliDecompressSync, gunzipSync, inflateSync } from "node:zlib";
import type { McpFacts } from "../judging/request-facts.ts";
import type { McpScope } from "./hosts.ts";
import { firstDuplicateKey } from "./json-duplicate-keys.ts";

/**
 * How the gateway reads a request body as JSON-RPC (MCP): the one reading
 * that grants, gates, meters, refusals and held calls all use.
 *
 * The rule is to judge exactly what the server behind will execute, or
 * refuse. Servers read more loosely than a strict parser: the MCP SDK parses
 * the media type case-insensitively, ignores the charset and decodes UTF-8
 * with its byte-order mark dropped; an express.json() server inflates a
 * Content-Encoding and decodes utf-16 when the charset says so; Python's
 * json.loads guesses UTF-16 and UTF-32 from the bytes. So on a host that
 * may speak MCP (hosts.ts) a body is read whatever its media type says:
 * decoded from gzip, deflate or br (within DECODED_MAX_BYTES), a UTF-8 BOM
 * dropped, then strictly UTF-8 and strictly JSON with no key twice. Whatever
 * would need another reading (another charset, another encoding, invalid
 * UTF-8, a repeated key, not JSON, not one JSON-RPC message) is refused there,
 * never forwarded under a host-wide allow.
 */
export type McpReading =
  /** One JSON-RPC request or notification: judged by its method and tool. */
  | { kind: "message"; mcp: McpFacts; message: Record<string, unknown> }
  /** A JSON-RPC response (an answer to the server's own request): no method, no tool. */
  | { kind: "response" }
  /** Nothing to judge: no body, or a body that is no MCP message on a host that doesn't speak MCP. */
  | { kind: "none" }
  /** An array of messages: refused whole, since judging one and forwarding many lets the rest by. */
  | { kind: "batch" }
  /** Where MCP is judged: a body the gateway can't read as its server would. */
  | { kind: "unreadable"; reason: string };

/** The most an encoded body may decode to: the MCP SDK's own bound on a request body. */
export const DECODED_MAX_BYTES = 4 * 1024 * 1024;

/**
 * Reads `body` (as sent, with the request's lower-cased headers) for a host
 * of the given scope (hosts.ts): on a host that speaks MCP, what can't be
 * read is refused; where any host may, what could be JSON but can't be read
 * is refused; elsewhere it only goes unnamed.
 */
export function readMcp(
  headers: Record<string, string>,
  body: Buffer,
  scope: McpScope,
): McpReading {
  if (body.length === 0) return { kind: "none" };
  if (scope === "no" && !mediaTypeIsJson(headers["content-type"])) return { kind: "none" };
  const read = readJsonRpc(headers, body);
  if (scope === "mcp") {
    if (read.kind === "batch") return { kind: "batch" };
    if (read.kind === "other") return { kind: "unreadable", reason: read.reason };
    return read;
  }
  if (read.kind === "batch") return read.anyJsonRpc ? { kind: "batch" } : { kind: "none" };
  if (read.kind === "other") return { kind: "none" };
  if (read.kind === "unreadable")
    return scope === "maybe" && couldBeJson(headers, body) ? read : { kind: "none" };
  return read;
}

/**
 * The MCP facts an audit line kept (a body the door read as one message),
 * as readMcp would read that body under `scope`: where no rule reads MCP,
 * only a body whose media type says JSON is read at all.
 */
export function recordedMcp(
  headers: Record<string, string>,
  mcp: McpFacts | null,
  scope: McpScope,
): McpFacts | null {
  if (mcp && scope === "no" && !mediaTypeIsJson(headers["content-type"])) return null;
  return mcp;
}

/**
 * Whether a request could carry JSON, from its headers alone: what decides
 * whether a body too large to hold by default is read, where any host may
 * speak MCP. A media type that names something else (an upload) streams.
 */
export function mightBeJson(headers: Record<string, string>): boolean {
  const type = headers["content-type"];
  if (!type || mediaTypeIsJson(type) || /charset/i.test(type)) return true;
  if (encoded(headers)) return true;
  try {
    new MIMEType(type);
    return false;
  } catch {
    // a media type no parser agrees on: read as a server that guesses might
    return true;
  }
}

/** From its headers or its first bytes, the body could be JSON to some server. */
function couldBeJson(headers: Record<string, string>, body: Buffer): boolean {
  if (mediaTypeIsJson(headers["content-type"]) || /charset/i.test(headers["content-type"] ?? ""))
    return true;
  if (encoded(headers)) return true;
  // UTF-16 or UTF-32, with a byte-order mark or without (a NUL among the first bytes)
  if (body[0] === 0xff || body[0] === 0xfe || body[0] === 0 || body[1] === 0) return true;
  const start = body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? 3 : 0;
  for (let index = start; index < body.length; index++) {
    const byte = body[index];
    if (byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d) continue;
    return byte === 0x7b || byte === 0x5b;
  }
  return false;
}

function encoded(headers: Record<string, string>): boolean {
  const coding = headers["content-encoding"];
  return coding !== undefined && coding.trim() !== "" && coding.trim().toLowerCase() !== "identity";
}

type Read =
  | Exclude<McpReading, { kind: "batch" | "none" }>
  | { kind: "batch"; anyJsonRpc: boolean }
  /** JSON, but not a JSON-RPC message. */
  | { kind: "other"; reason: string };

function readJsonRpc(headers: Record<string, string>, body: Buffer): Read {
  const text = decodeText(headers, body);
  if (typeof text !== "string") return { kind: "unreadable", reason: text.reason };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { kind: "unreadable", reason: "the body is not JSON" };
  }
  const duplicate = firstDuplicateKey(text);
  if (duplicate !== undefined) {
    return {
      kind: "unreadable",
      reason: `the key "${duplicate.slice(0, 64)}" appears twice in one object, and servers differ on which one counts`,
    };
  }
  if (Array.isArray(parsed))
    return { kind: "batch", anyJsonRpc: parsed.some((item) => hasMethod(item)) };
  if (typeof parsed !== "object" || parsed === null)
    return { kind: "other", reason: "the body is JSON but not a JSON-RPC message (an object)" };
  const message = parsed as Record<string, unknown>;
  if (!("method" in message)) {
    const answer = "id" in message && ("result" in message || "error" in message);
    return answer
      ? { kind: "response" }
      : { kind: "other", reason: "the body is neither a JSON-RPC request nor a response" };
  }
  if (typeof message.method !== "string")
    return { kind: "other", reason: "the JSON-RPC method is not a string" };
  if (message.method !== "tools/call")
    return { kind: "message", mcp: { method: message.method }, message };
  const params = message.params;
  const name =
    typeof params === "object" && params !== null && !Array.isArray(params)
      ? (params as { name?: unknown }).name
      : undefined;
  if (typeof name !== "string")
    return { kind: "other", reason: "a tools/call without a tool name (params.name)" };
  return { kind: "message", mcp: { method: message.method, tool: name }, message };
}

function hasMethod(value: unknown): boolean {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { method?: unknown }).method === "string"
  );
}

/** The media type's essence says JSON (`application/json`, `text/json`, `…+json`), in any case. */
export function mediaTypeIsJson(header: string | undefined): boolean {
  if (!header) return false;
  let essence: string;
  try {
    essence = new MIMEType(header).essence;
  } catch {
    essence = (header.split(";", 1)[0] ?? "").trim().toLowerCase();
  }
  return essence.endsWith("/json") || essence.endsWith("+json");
}

const UTF8 = new Set(["utf-8", "utf8"]);

/** The body as text, as every server reads it alike; or why it can't be. */
function decodeText(headers: Record<string, string>, body: Buffer): string | { reason: string } {
  // every charset parameter, however the header is written: a parser that keeps the first
  // and one that keeps the last must both find UTF-8
  for (const match of (headers["content-type"] ?? "").matchAll(/charset\s*=\s*"?([^";,\s]*)/gi)) {
    const charset = (match[1] ?? "").toLowerCase();
    if (!UTF8.has(charset))
      return {
        reason: `charset "${charset.slice(0, 32)}": the gateway judges MCP messages in UTF-8 only (send charset=utf-8, or none)`,
      };
  }
  const decoded = decodeContent(headers["content-encoding"], body);
  if (!Buffer.isBuffer(decoded)) return decoded;
  const bom = decoded[0] === 0xef && decoded[1] === 0xbb && decoded[2] === 0xbf;
  try {
    // fatal: a byte that isn't UTF-8 is read as U+FFFD by some servers and refused by others
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(
      bom ? decoded.subarray(3) : decoded,
    );
  } catch {
    return { reason: "the body is not valid UTF-8" };
  }
}

/** Undoes a Content-Encoding (outermost last), within DECODED_MAX_BYTES; anything else is refused. */
function decodeContent(header: string | undefined, body: Buffer): Buffer | { reason: string } {
  const codings = (header ?? "")
    .split(",")
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== "" && coding !== "identity");
  let bytes = body;
  for (const coding of codings.reverse()) {
    const decode = DECODERS[coding];
    if (!decode)
      return {
        reason: `Content-Encoding "${coding.slice(0, 32)}" is not one the gateway reads (gzip, deflate, br)`,
      };
    try {
      bytes = decode(bytes, { maxOutputLength: DECODED_MAX_BYTES });
    } catch {
      return {
        reason: `the ${coding} body could not be decoded within ${DECODED_MAX_BYTES / (1024 * 1024)} MiB`,
      };
    }
  }
  return bytes;
}

const DECODERS: Record<string, (bytes: Buffer, options: { maxOutputLength: number }) => Buffer> = {
  gzip: gunzipSync,
  "x-gzip": gunzipSync,
  deflate: inflateSync,
  br: brotliDecompressSync,
};
