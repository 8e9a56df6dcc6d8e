import { isIP } from "node:net";
import { hostName } from "../../../ground/config/host-name.ts";
import { hostPatternProblem } from "../../../ground/config/host-pattern.ts";
import { addressProblem } from "../upstream/ssrf.ts";

/**
 * A grant roster writes for one worker, as org.toml text: what a refusal's
 * suggestion prints (`roster gateway log --suggest`) and what an approved
 * access request appends. It goes in org.toml with `workers = [<worker>]`
 * because a worker.toml may only narrow (its grants are deny grants). Every
 * field is narrow on purpose: one exact host, the methods named, a path
 * prefix, the protocols named.
 */
export interface NarrowGrant {
  name: string;
  worker: string;
  host: string;
  protocols: readonly ("http" | "https")[];
  methods: readonly string[];
  /** `/` admits the whole host and is then left out. */
  pathPrefix: string;
}

const quote = (text: string) => JSON.stringify(text);
const oneOrList = (values: readonly string[]) =>
  values.length === 1 ? quote(values[0] ?? "") : `[${values.map(quote).join(", ")}]`;

/** The `[[grant]]` table, one key a line and the match inline, as `roster init` writes grants. */
export function grantToml(grant: NarrowGrant): string {
  const match = [
    `protocol = ${oneOrList(grant.protocols)}`,
    `host = ${quote(grant.host)}`,
    `method = [${grant.methods.map(quote).join(", ")}]`,
    ...(grant.pathPrefix === "/" ? [] : [`pathPrefix = ${quote(grant.pathPrefix)}`]),
  ];
  return [
    "[[grant]]",
    `name = ${quote(grant.name)}`,
    'verdict = "allow"',
    `match = { ${match.join(", ")} }`,
    `workers = [${quote(grant.worker)}]`,
    "",
  ].join("\n");
}

/** `[[test]]` cases that hold the grant to what it is for: each method at its prefix, allowed by it. */
export function grantTestsToml(grant: NarrowGrant): string {
  const protocol = grant.protocols.includes("https") ? "https" : "http";
  const host = isIP(grant.host) === 6 ? `[${grant.host}]` : grant.host;
  return grant.methods
    .map((method) =>
      [
        "[[test]]",
        `request = ${quote(`${method} ${protocol}://${host}${grant.pathPrefix}`)}`,
        `worker = ${quote(grant.worker)}`,
        'expect = "allow"',
        `rule = ${quote(grant.name)}`,
        "",
      ].join("\n"),
    )
    .join("\n");
}

/** `block` appended to a TOML file's text, one blank line between (a missing file is empty). */
export function appendedToml(current: string | undefined, block: string): string {
  const text = current ?? "";
  if (!text.trim()) return block;
  return `${text.replace(/\n*$/, "\n")}\n${block}`;
}

/**
 * Why a host can't be named by a grant roster writes: a wildcard or a bad
 * name, or a place a grant naming it would open although the SSRF guard
 * keeps it shut (an internal address, this host by name). Undefined when it
 * may be named.
 */
export function grantHostProblem(raw: string): string | undefined {
  const host = hostName(raw);
  if (host.includes("*")) return `${raw}: a wildcard host is never written for you`;
  const problem = hostPatternProblem(host);
  if (problem) return `${raw}: ${problem}`;
  if (isIP(host)) {
    const internal = addressProblem(host);
    if (internal)
      return `${raw}: an internal address (${internal}): a grant naming it would lift the SSRF guard`;
  }
  if (host === "localhost" || host.endsWith(".localhost"))
    return `${raw}: this host (loopback): a grant naming it would lift the SSRF guard`;
  return undefined;
}
