/**
 * What `roster policy check` does: one request judged by the door's own
 * ruling (boundary/gateway/policy/check.ts) under the deployment's config or
 * a draft's, printed as a verdict a person reads or one JSON object. Nothing
 * is sent, written or charged. Loaded only when the command runs.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { PolicyVerdict } from "../../boundary/gateway/policy/check.ts";
import { rosterPaths } from "../../ground/config/paths.ts";
import { RosterError } from "../../ground/errors.ts";

export interface PolicyCheckFlags {
  header?: string[];
  bodyFile?: string;
  channel?: string;
  config?: string;
  json?: boolean;
}

/** `roster policy check`: refused (exit 2) on a bad URL, header or body file, or a worker the config lacks. */
export async function policyCheckCommand(
  worker: string,
  method: string,
  url: string,
  flags: PolicyCheckFlags,
): Promise<void> {
  const { loadConfig } = await import("../../ground/config/load.ts");
  const { policyCheck } = await import("../../boundary/gateway/policy/check.ts");
  const paths = rosterPaths();
  const root = flags.config ? resolve(flags.config) : paths.config;
  const config = loadConfig(root, { vaultDir: paths.vault });
  if (!config.errors.length && !config.workers.has(worker))
    throw refuse(`no worker named "${worker}" in ${root}`);
  if (!/^https?:\/\//.test(url) || !URL.canParse(url))
    throw refuse(`${url}: expected an absolute http:// or https:// URL`);
  if (!/^[A-Za-z]+$/.test(method)) throw refuse(`${method}: expected an HTTP method, e.g. GET`);
  const verdict = policyCheck(config, {
    worker,
    method,
    url,
    headers: headersOf(flags.header ?? []),
    ...(flags.bodyFile ? { body: bodyOf(flags.bodyFile) } : {}),
    ...(flags.channel ? { channel: flags.channel } : {}),
  });
  process.stdout.write(flags.json ? `${JSON.stringify(verdict)}\n` : said(verdict));
}

const refuse = (message: string) => new RosterError(message, { exitCode: 2 });

function headersOf(given: string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const header of given) {
    const colon = header.indexOf(":");
    if (colon <= 0) throw refuse(`--header ${header}: expected name:value`);
    headers[header.slice(0, colon).trim().toLowerCase()] = header.slice(colon + 1).trim();
  }
  return headers;
}

function bodyOf(file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    throw refuse(`--body-file ${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** The verdict in lines: the word and the rule first, then what goes with it. */
function said(verdict: PolicyVerdict): string {
  const head = [
    verdict.verdict,
    ...(verdict.status ? [String(verdict.status)] : []),
    verdict.rule
      ? `rule "${verdict.rule}"${verdict.source ? ` (${verdict.source})` : ""}`
      : "no rule",
  ].join("  ");
  const lines = [head];
  if (verdict.mcp)
    lines.push(`  mcp: ${verdict.mcp.method}${verdict.mcp.tool ? ` ${verdict.mcp.tool}` : ""}`);
  if (verdict.credential)
    lines.push(
      `  credential: ${verdict.credential.name} → ${verdict.credential.headers.join(", ")}`,
    );
  const meters = Object.entries(verdict.meters);
  if (meters.length) lines.push(`  meters: ${meters.map(([c, n]) => `${n} ${c}`).join(", ")}`);
  if (verdict.model) lines.push("  a model call: its usage is metered from the answer");
  if (verdict.channel || verdict.channelClass)
    lines.push(
      `  channel: ${verdict.channel ?? "none"}${verdict.channelClass ? ` (the rule is for ${verdict.channelClass})` : ""}`,
    );
  if (verdict.error) lines.push(`  error: ${verdict.error}`);
  if (verdict.hint) lines.push(`  hint: ${verdict.hint}`);
  return `${lines.join("\n")}\n`;
}
