import { serviceReach } from "../../../ground/config/connections.ts";
import { hostMatches } from "../../../ground/config/host-pattern.ts";
import type { LoadedConfig } from "../../../ground/config/load.ts";

/**
 * How a host's request bodies are read for MCP (reading.ts):
 * - `mcp`: the host speaks MCP — an `mcp` connection points at it, or a grant
 *   or a meter names it with `match.mcp` (a meter naming rules: their hosts).
 *   Every body there is read whole and must be one JSON-RPC message the
 *   gateway reads as its server would; anything else is refused.
 * - `maybe`: a grant or meter with `match.mcp` names no host (say a meter on
 *   `create_*` wherever it is called), so any host may be an MCP server.
 *   Bodies that could be JSON are read; a message is judged; one that could
 *   be JSON but can't be read as the server would is refused; the rest (a
 *   model call, an upload) passes as no MCP message.
 * - `no`: no rule reads MCP facts here; the reading only names what it finds
 *   on the audit line.
 */
export type McpScope = "mcp" | "maybe" | "no";

export function mcpScope(config: LoadedConfig, host: string): McpScope {
  let hosts = cache.get(config);
  if (!hosts) {
    hosts = mcpHosts(config);
    cache.set(config, hosts);
  }
  if (hosts.named.some((pattern) => hostMatches(pattern, host))) return "mcp";
  return hosts.anywhere ? "maybe" : "no";
}

interface McpHosts {
  named: string[];
  anywhere: boolean;
}

const cache = new WeakMap<LoadedConfig, McpHosts>();

const list = <T>(value: T | T[] | undefined): T[] | undefined =>
  value === undefined ? undefined : Array.isArray(value) ? value : [value];

function mcpHosts(config: LoadedConfig): McpHosts {
  const named: string[] = [];
  let anywhere = false;
  const add = (hosts: string[] | undefined) => {
    if (hosts) named.push(...hosts);
    else anywhere = true;
  };
  for (const connection of config.connections.values()) {
    if (connection.kind === "mcp") named.push(...(serviceReach(connection)?.hosts ?? []));
  }
  for (const grant of config.grants) {
    if (grant.match?.mcp !== undefined) add(list(grant.match.host));
  }
  for (const meter of config.meters) {
    const match = meter.match;
    if (match?.mcp === undefined) continue;
    const rules = list(match.rule);
    if (match.host !== undefined || !rules) {
      add(list(match.host));
      continue;
    }
    for (const grant of config.grants) {
      if (rules.includes(grant.name)) add(list(grant.match?.host));
    }
  }
  return { named: [...new Set(named)], anywhere };
}
