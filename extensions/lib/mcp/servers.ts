/**
 * The box's list of MCP servers, from ROSTER_MCP_JSON: the host writes it from
 * the operator's config (the worker's `kind = "mcp"` connections and its
 * worker.toml `[[mcp]]`). An entry that doesn't parse is reported and left out,
 * so one bad entry never costs the others.
 */

export interface RemoteServer {
  name: string;
  transport: "http" | "sse";
  url: string;
}

export interface StdioServer {
  name: string;
  transport: "stdio";
  command: string[];
  env: Record<string, string>;
}

/** callTimeoutSecs: the operator's deadline for one call to this server, if set. */
export type ServerEntry = (RemoteServer | StdioServer) & { callTimeoutSecs?: number };

const NAME = /^[a-z0-9][a-z0-9_-]{0,31}$/;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const isStrings = (value: unknown): value is string[] =>
  Array.isArray(value) && value.every((item) => typeof item === "string");

function entry(raw: unknown): ServerEntry | string {
  const read = server(raw);
  if (typeof read === "string" || !isRecord(raw)) return read;
  const secs = raw.callTimeoutSecs;
  return typeof secs === "number" && Number.isInteger(secs) && secs > 0 && secs <= 3600
    ? { ...read, callTimeoutSecs: secs }
    : read;
}

function server(raw: unknown): RemoteServer | StdioServer | string {
  if (!isRecord(raw) || typeof raw.name !== "string" || !NAME.test(raw.name))
    return "an entry without a valid name";
  const { name, transport } = raw;
  if (transport === "http" || transport === "sse") {
    if (typeof raw.url !== "string" || !raw.url.startsWith("https://"))
      return `${name}: no https url`;
    return { name, transport, url: raw.url };
  }
  if (transport === "stdio") {
    if (!isStrings(raw.command) || raw.command.length === 0) return `${name}: no command`;
    const env = isRecord(raw.env) ? raw.env : {};
    if (!Object.values(env).every((value) => typeof value === "string"))
      return `${name}: env values must be strings`;
    return { name, transport, command: raw.command, env: env as Record<string, string> };
  }
  return `${name}: unknown transport ${JSON.stringify(transport)}`;
}

export function readServers(json: string | undefined): { servers: ServerEntry[]; notes: string[] } {
  if (!json) return { servers: [], notes: [] };
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return { servers: [], notes: ["ROSTER_MCP_JSON is not JSON: no MCP servers"] };
  }
  if (!Array.isArray(parsed)) return { servers: [], notes: ["ROSTER_MCP_JSON is not a list"] };
  const servers: ServerEntry[] = [];
  const notes: string[] = [];
  for (const raw of parsed) {
    const read = entry(raw);
    if (typeof read === "string") notes.push(`MCP server skipped: ${read}`);
    else if (servers.some((s) => s.name === read.name))
      notes.push(`MCP server skipped: ${read.name} is listed twice`);
    else servers.push(read);
  }
  return { servers, notes };
}
