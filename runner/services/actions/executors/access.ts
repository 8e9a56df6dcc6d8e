import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type Static, Type } from "@sinclair/typebox";
import { normalisePath } from "../../../boundary/gateway/judging/request-facts.ts";
import { policyCheck } from "../../../boundary/gateway/policy/check.ts";
import { applyConfigEdit, vetConfigEdit } from "../../../boundary/gateway/policy/config-edit.ts";
import {
  appendedToml,
  grantHostProblem,
  grantTestsToml,
  grantToml,
  type NarrowGrant,
} from "../../../boundary/gateway/policy/grant-text.ts";
import { hostName } from "../../../ground/config/host-name.ts";
import { loadConfig } from "../../../ground/config/load.ts";
import type { ExecutionContext, Executor } from "../../executor.ts";
import { diffAgainst } from "./file-diff.ts";

/**
 * access: a worker asks for a grant (`request_access`): one exact host, the
 * methods, a path prefix, and why. The proposal is the exact edit of
 * org.toml it makes — a `[[grant]]` for that worker alone, over https, and
 * a `[[test]]` per method holding the grant to it — shown at the desk as a
 * diff. It goes in org.toml because a worker.toml may only narrow (its
 * grants are deny grants). It always waits for a human, whatever trust says
 * (trust.ts). Approved, the edit is written through applyConfigEdit: tried
 * on a copy, loaded, every `[[test]]` run, written atomically; refused, the
 * approval fails with the problems and the config is as it was. The door
 * re-reads the config when a file changes, so it governs the next request.
 */
export const ACCESS_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;

const Payload = Type.Object(
  {
    host: Type.String({ minLength: 1, maxLength: 253, pattern: "^[A-Za-z0-9._-]+$" }),
    methods: Type.Array(Type.Union(ACCESS_METHODS.map((method) => Type.Literal(method))), {
      minItems: 1,
      maxItems: ACCESS_METHODS.length,
      uniqueItems: true,
    }),
    // URL path characters, no `%` (the door decodes a prefix before it compares) and no quote
    path_prefix: Type.String({ maxLength: 256, pattern: "^/[A-Za-z0-9._~!$&'()*+,;=:@/-]*$" }),
    why: Type.String({ minLength: 1, maxLength: 1000 }),
  },
  { additionalProperties: false },
);
type Payload = Static<typeof Payload>;

type Where = Pick<ExecutionContext, "paths" | "worker">;

/** The grant asked for; its name is made from what it admits, so the same request is the same grant. */
function grantOf(payload: Payload, worker: string): NarrowGrant {
  const host = hostName(payload.host);
  const methods = ACCESS_METHODS.filter((method) => payload.methods.includes(method));
  const digest = createHash("sha256")
    .update(JSON.stringify([worker, host, methods, payload.path_prefix]))
    .digest("hex")
    .slice(0, 8);
  return {
    name: `access-${worker}-${digest}`,
    worker,
    host,
    protocols: ["https"],
    methods,
    pathPrefix: payload.path_prefix,
  };
}

/** What is appended to org.toml: a line saying whose it is, the grant, and its tests. */
function blockOf(grant: NarrowGrant): string {
  return `# ${grant.worker} asked for this with request_access; approved at the desk\n${grantToml(grant)}\n${grantTestsToml(grant)}`;
}

const orgFile = (where: Where) => join(where.paths.config, "org.toml");
const readOrg = (where: Where) =>
  existsSync(orgFile(where)) ? readFileSync(orgFile(where), "utf8") : undefined;
const granted = (text: string | undefined, grant: NarrowGrant) =>
  (text ?? "").includes(`name = ${JSON.stringify(grant.name)}`);

/** org.toml as the approval would leave it. */
function proposed(current: string | undefined, grant: NarrowGrant): string | undefined {
  return granted(current, grant) ? current : appendedToml(current, blockOf(grant));
}

/**
 * Refused before anything is filed: a host a grant may not name, a prefix
 * the door would read as another, a request already allowed, or an edit
 * the config would refuse (a worker's deny grant before it, a test it fails).
 */
function precheck(payload: Payload, where: Where): string | undefined {
  const host = grantHostProblem(payload.host);
  if (host) return `payload.host: ${host}`;
  if (normalisePath(payload.path_prefix) !== payload.path_prefix)
    return `payload.path_prefix: "${payload.path_prefix}" is not a plain path (the door reads it as "${normalisePath(payload.path_prefix)}")`;
  const grant = grantOf(payload, where.worker);
  const config = loadConfig(where.paths.config, { vaultDir: where.paths.vault });
  if (!config.errors.length) {
    const verdicts = grant.methods.map((method) =>
      policyCheck(config, {
        worker: where.worker,
        method,
        url: `https://${grant.host}${grant.pathPrefix}`,
      }),
    );
    if (verdicts.every((verdict) => verdict.verdict === "allow"))
      return `already allowed: the door lets ${grant.methods.join(", ")} https://${grant.host}${grant.pathPrefix} through (rule "${verdicts[0]?.rule}"); send the request again`;
  }
  const problems = vetConfigEdit(
    where.paths.config,
    [{ file: "org.toml", text: proposed(readOrg(where), grant) }],
    { vaultDir: where.paths.vault },
  );
  return problems.length
    ? `the config would refuse this grant, so it can't be filed: ${problems.slice(0, 3).join("; ")}`
    : undefined;
}

export const access: Executor<Payload> = {
  schema: Payload,
  summary: (payload) =>
    `access to ${payload.methods.join(", ")} https://${hostName(payload.host)}${payload.path_prefix}`,
  render: (payload, context) => {
    if (!context) return blockOf(grantOf(payload, "<worker>"));
    const grant = grantOf(payload, context.worker);
    return `${grant.methods.join(", ")} https://${grant.host}${grant.pathPrefix} for ${context.worker}: ${payload.why}\n\n${diffAgainst(orgFile(context), "org.toml", proposed(readOrg(context), grant) ?? "")}`;
  },
  precheck,
  // what the door lets through is the operator's word alone
  mustGate: () =>
    "an access request always waits for a human: it widens what the door lets through",
  async run(payload, context) {
    const grant = grantOf(payload, context.worker);
    const outcome = await applyConfigEdit(
      context.paths.config,
      (current) => {
        const now = current("org.toml");
        return granted(now, grant) ? [] : [{ file: "org.toml", text: proposed(now, grant) }];
      },
      { vaultDir: context.paths.vault },
    );
    if (!outcome.ok)
      throw new Error(
        `the config refused the grant and was left as it was: ${outcome.problems.slice(0, 3).join("; ")}`,
      );
    return {
      status: outcome.written.length ? "ok" : "unchanged",
      grant: grant.name,
      file: "org.toml",
    };
  },
};
