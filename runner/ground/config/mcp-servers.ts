import type { ConfigError } from "./config-error.ts";
import type { WorkerConfig } from "./config-schema.ts";
import type { ConnectionConfig } from "./connection-schema.ts";
import { grantedTo } from "./connections.ts";
import { locateLine } from "./locate.ts";
import { MCP_SERVER_NAME, type McpServerEntry } from "./mcp-schema.ts";

/**
 * The MCP servers one worker gets, as the box's list (ROSTER_MCP_JSON): every
 * `kind = "mcp"` connection granted to it, then the stdio servers its
 * worker.toml declares. Built on the host from the operator's config only.
 */
export function mcpServersFor(
  connections: ReadonlyMap<string, ConnectionConfig>,
  workerName: string,
  worker: WorkerConfig,
): McpServerEntry[] {
  const servers: McpServerEntry[] = [];
  for (const [name, connection] of connections) {
    if (connection.kind !== "mcp" || !grantedTo(connection, workerName)) continue;
    servers.push({
      name,
      transport: connection.transport ?? "http",
      url: connection.url,
      ...(connection.call_timeout_secs ? { callTimeoutSecs: connection.call_timeout_secs } : {}),
    });
  }
  for (const declared of worker.mcp ?? []) {
    servers.push({
      name: declared.name,
      transport: "stdio",
      command: declared.command,
      env: declared.env ?? {},
      ...(declared.call_timeout_secs ? { callTimeoutSecs: declared.call_timeout_secs } : {}),
    });
  }
  return servers;
}

/** An MCP connection's file name is its tools' prefix, so it must fit the server-name rule. */
export function mcpConnectionNameProblem(name: string): string | undefined {
  return new RegExp(MCP_SERVER_NAME).test(name)
    ? undefined
    : `an MCP connection's name prefixes its tools: it must match ${MCP_SERVER_NAME} (rename the file)`;
}

/**
 * A worker's `[[mcp]]` names must differ from each other and from the MCP
 * connections granted to it: two servers with one name would register the
 * same tool names.
 */
export function checkMcpNames(
  connections: ReadonlyMap<string, ConnectionConfig>,
  workerName: string,
  worker: WorkerConfig,
  display: string,
  text: string,
): ConfigError[] {
  const errors: ConfigError[] = [];
  const taken = new Map<string, string>();
  for (const [name, connection] of connections) {
    if (connection.kind === "mcp" && grantedTo(connection, workerName))
      taken.set(name, `the MCP connection connections/${name}.toml`);
  }
  (worker.mcp ?? []).forEach((declared, index) => {
    const other = taken.get(declared.name);
    if (other) {
      errors.push({
        file: display,
        line: locateLine(text, `/mcp/${index}/name`),
        field: `mcp.${index}.name`,
        message: `"${declared.name}" is already the name of ${other}; each MCP server needs a name of its own`,
      });
    }
    taken.set(declared.name, `[[mcp]] ${index}`);
  });
  return errors;
}
