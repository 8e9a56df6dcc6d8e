import { MIMEType } from "node:util";
import { brotliDecompressSync, gunzipSync, inflateSync } from "node:zlib";
import { firstDuplicateKey } from "./json-duplicate-keys.ts";
import type { McpFacts } from "./request-facts.ts";

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
 * speaks MCP (mcp-hosts.ts) every body is read whatever its media type says:
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
  /** On a host that speaks MCP: a body the gateway can't read as its server would. */
  | { kind: "unreadable"; reason: string };

/** The most an encoded body may decode to: the MCP SDK's own bound on a request body. */
export const DECODED_MAX_BYTES = 4 * 1024 * 1024;

/**
 * Reads `body` (as sent, with the request's lower-cased headers). `speaksMcp`:
 * the host has an MCP rule or connection, so an unreadable body is refused
 * rather than passed on as no MCP message at all.
 */
export function readMcp(
  headers: Record<string, string>,
  body: Buffer,
  speaksMcp: boolean,
): McpReading {
  if (body.length === 0) return { kind: "none" };
  if (!speaksMcp) {
    // elsewhere nothing is judged by the reading, only the audit line names what it finds
    if (!mediaTypeIsJson(headers["content-type"])) return { kind: "none" };
    const read = readJsonRpc(headers, body);
    if (read.kind === "batch" && !read.anyJsonRpc) return { kind: "none" };
    if (read.kind === "unreadable" || read.kind === "other") return { kind: "none" };
    return read.kind === "batch" ? { kind: "batch" } : read;
  }
  const read = readJsonRpc(headers, body);
  if (read.kind === "batch") return { kind: "batch" };
  if (read.kind === "other") return { kind: "unreadable", reason: read.reason };
  return read;
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
