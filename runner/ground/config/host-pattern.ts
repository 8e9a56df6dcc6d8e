import { isIP } from "node:net";
import { hostName } from "./host-name.ts";

/**
 * Host patterns in grants: `*` (any host), `*.example.com` (example.com and any
 * subdomain), or one exact name or address. Returns why a pattern is invalid,
 * or undefined when it is fine.
 */
const LABEL = /^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/i;

export function hostPatternProblem(pattern: string): string | undefined {
  if (pattern === "*") return undefined;
  const bare = pattern.startsWith("[") && pattern.endsWith("]") ? pattern.slice(1, -1) : pattern;
  if (isIP(bare)) return undefined;
  const name = pattern.startsWith("*.") ? pattern.slice(2) : pattern;
  if (name.includes("*")) return "a wildcard may only be a leading `*.` or the whole pattern `*`";
  if (name.includes(":") || name.includes("/")) return "a host pattern has no port, scheme or path";
  const labels = name.split(".");
  if (name.length > 253 || labels.some((label) => !LABEL.test(label))) {
    return "not a valid host name";
  }
  return undefined;
}

export function hostMatches(pattern: string, host: string): boolean {
  const target = hostName(host);
  if (pattern === "*") return true;
  if (pattern.startsWith("*.")) {
    const suffix = hostName(pattern.slice(2));
    return target === suffix || target.endsWith(`.${suffix}`);
  }
  return target === hostName(pattern);
}
