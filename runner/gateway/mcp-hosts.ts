import { serviceReach } from "../config/connections.ts";
import { hostMatches } from "../config/host-pattern.ts";
import type { LoadedConfig } from "../config/load.ts";

/**
 * The hosts that speak MCP, as far as the gateway must care: those an `mcp`
 * connection points at, and those a grant or a meter reads MCP facts for
 * (`match.mcp`). On such a host every request body is read as JSON-RPC
 * before judging, whatever its size or media type, and one that can't be
 * read as its server would read it is refused (mcp-reading.ts). A rule with
 * `match.mcp` and no host makes every host one; a meter without a host
 * counts on the hosts of the grants it names (`match.rule`), or on all.
 */
export function speaksMcp(config: LoadedConfig, host: string): boolean {
  let patterns = cache.get(config);
  if (!patterns) {
    patterns = mcpHostPatterns(config);
    cache.set(config, patterns);
  }
  return patterns.some((pattern) => hostMatches(pattern, host));
}

const cache = new WeakMap<LoadedConfig, string[]>();

const list = <T>(value: T | T[] | undefined): T[] | undefined =>
  value === undefined ? undefined : Array.isArray(value) ? value : [value];

function mcpHostPatterns(config: LoadedConfig): string[] {
  const patterns: string[] = [];
  for (const connection of config.connections.values()) {
    if (connection.kind === "mcp") patterns.push(...(serviceReach(connection)?.hosts ?? []));
  }
  for (const grant of config.grants) {
    if (grant.match?.mcp !== undefined) patterns.push(...(list(grant.match.host) ?? ["*"]));
  }
  for (const meter of config.meters) {
    const match = meter.match;
    if (match?.mcp === undefined) continue;
    const hosts = list(match.host);
    if (hosts) {
      patterns.push(...hosts);
      continue;
    }
    const rules = list(match.rule);
    if (!rules) {
      patterns.push("*");
      continue;
    }
    for (const grant of config.grants) {
      if (rules.includes(grant.name)) patterns.push(...(list(grant.match?.host) ?? ["*"]));
    }
  }
  return [...new Set(patterns)];
}
