/**
 * Bounds on what one audit line may hold. A box chooses most of a line (its
 * method, host as sent, path, query, headers, an MCP method and tool name
 * lifted from a body of up to 64 MiB, notes that quote them), and a loop of
 * refused requests must not turn each into megabytes on the host's disk. So
 * every string in a line is cut to a stated length with a marker saying how
 * much went, and headers are cut in number too: whatever a box sends, a line
 * stays under about 16 KiB and still names the start of what was sent.
 */
/** Characters kept of any one string in a line (path, query, tool name, note, …). */
export const AUDIT_FIELD_CHARS = 512;
/** Characters kept of a header's value, and of its name. */
export const AUDIT_HEADER_VALUE_CHARS = 256;
export const AUDIT_HEADER_NAME_CHARS = 64;
/** A run's origin channels kept in a line (the host writes them, from the run's token; a chat run has one or two). */
export const AUDIT_ORIGINS = 16;
/** Headers kept in a line; the rest are counted under one `…` entry. */
export const AUDIT_HEADERS = 32;

/** `text` whole when short, else its first `limit` characters and a marker saying what went. */
export function cutText(text: string, limit = AUDIT_FIELD_CHARS): string {
  if (text.length <= limit) return text;
  return `${text.slice(0, limit)}…[${text.length - limit} more characters cut]`;
}

/** Headers, each name and value cut, at most AUDIT_HEADERS of them. */
export function cutHeaders(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  const entries = Object.entries(headers);
  for (const [name, value] of entries.slice(0, AUDIT_HEADERS))
    out[cutText(name, AUDIT_HEADER_NAME_CHARS)] = cutText(value, AUDIT_HEADER_VALUE_CHARS);
  if (entries.length > AUDIT_HEADERS)
    out["…"] = `${entries.length - AUDIT_HEADERS} more headers cut`;
  return out;
}

/**
 * Every string anywhere in `value` cut to AUDIT_FIELD_CHARS (objects and
 * arrays walked; numbers, booleans and null as they are). Applied to a whole
 * line, so a field added later is bounded without anyone remembering to.
 */
export function cutStrings<T>(value: T): T {
  return walk(value) as T;
}

function walk(value: unknown): unknown {
  if (typeof value === "string") return cutText(value);
  if (Array.isArray(value)) return value.map(walk);
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) out[cutText(key)] = walk(inner);
    return out;
  }
  return value;
}
