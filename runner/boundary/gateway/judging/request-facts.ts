/**
 * What the judge sees of a request: pure data, no sockets. The names here are
 * what the audit log records, so they stay stable.
 */
export type Protocol = "http" | "https";

/** Where a request goes, as the box named it. */
export interface Target {
  protocol: Protocol;
  host: string;
  port: number;
}

export interface McpFacts {
  method: string;
  tool?: string;
}

export interface RequestFacts {
  /** `org/<worker>` from the run token; undefined when the token is missing or unknown. */
  subject: string | undefined;
  runId: string | undefined;
  /** The channels the run's input came from (identity.ts); undefined when its token doesn't say. */
  origins: string[] | undefined;
  /** `page`: no token on the run's own door, the renderer's browser (caller.ts); undefined: the run itself. */
  actor?: "page";
  protocol: Protocol;
  method: string;
  host: string;
  port: number;
  /** The path as judged: percent-decoded, dot-segments resolved. */
  path: string;
  query: string;
  /** Lower-cased names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  bodySize: number;
  mcp: McpFacts | null;
}

/** Decodes percent-escapes and resolves `.`/`..` so that a prefix check can't be walked around. */
export function normalisePath(raw: string): string {
  let path = raw.replace(/\\/g, "/");
  try {
    path = decodeURIComponent(path);
  } catch {
    // invalid escapes stay as written; they can't decode to a dot-segment
  }
  const out: string[] = [];
  for (const segment of path.split("/")) {
    if (segment === "" || segment === ".") continue;
    if (segment === "..") out.pop();
    else out.push(segment);
  }
  const trailing = path.endsWith("/") && out.length > 0 ? "/" : "";
  return `/${out.join("/")}${trailing}`;
}

/** Joins repeated headers and lower-cases names, the form rules match against. */
export function flattenHeaders(
  headers: Record<string, string | string[] | undefined>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    out[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value;
  }
  return out;
}
