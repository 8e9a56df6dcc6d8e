import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import type { ConnectionConfig } from "./connection-schema.ts";
import { edgeGrants, edgeTerms } from "./edge-scope.ts";
import type { ScopedGrant } from "./grant-schema.ts";
import { SERVICE_TOKEN_AUTH } from "./providers.ts";
import { workerSubject } from "./subject.ts";
import { writesFromAny } from "./write-from.ts";

/**
 * connections/<name>.toml compiled into what the rest of roster uses: gateway
 * rules (`connection:<name>`) for services, mounts for host folders and repos,
 * and sentinel env names for the box. `[grant.<worker>]` / `[grant.org]` say
 * who gets it; a worker's own edge comes before the org's, so where they
 * differ (a narrowed edge, edge-scope.ts) the worker's own decides for it.
 */
export interface ConnectionMount {
  name: string;
  path: string;
  readOnly: boolean;
  kind: "host-dir" | "host-repo";
  /** A gated repo: each run gets its own clone and may propose pushes under these rules. */
  gated?: RepoPolicy;
  /**
   * roster's own per-worker connection (the knowledge repo), written by the
   * worker itself: nothing in it configures anything, so no project toolchain
   * is read from it.
   */
  builtIn?: boolean;
}

/** What a gated repo lets a push carry (defaults filled in). */
export interface RepoPolicy {
  branch: string;
  allowExecutables: boolean;
  maxFileBytes: number;
  maxPushBytes: number;
  maxDeletionsUngated: number;
  /** The clean-room rule: "clean" takes pushes only from runs that carried no conversation. */
  writeFrom: "clean" | "any";
  /**
   * A push naming a participant of the run's conversations is refused. Off
   * only for a worker's own knowledge repo, whose point is to remember people.
   */
  scanParticipants: boolean;
}

export const REPO_DEFAULTS = {
  branch: "main",
  maxFileBytes: 10 * 1024 * 1024,
  maxPushBytes: 100 * 1024 * 1024,
  maxDeletionsUngated: 20,
  writeFrom: "clean",
  scanParticipants: true,
} as const;

/** The edges in the order their rules go: the workers' own (sorted), then `org`. */
function edgeNames(connection: ConnectionConfig): string[] {
  const edges = Object.keys(connection.grant ?? {}).sort();
  return [...edges.filter((edge) => edge !== "org"), ...edges.filter((edge) => edge === "org")];
}

export function grantedTo(connection: ConnectionConfig, worker: string): boolean {
  const edges = Object.keys(connection.grant ?? {});
  return edges.includes("org") || edges.includes(worker);
}

/** The hosts, port and methods a service or MCP connection opens; undefined for a mount. */
export function serviceReach(connection: ConnectionConfig): ServiceReach | undefined {
  if (connection.kind === "host-dir" || connection.kind === "host-repo") return undefined;
  const inject = {
    header: connection.inject_header ?? SERVICE_TOKEN_AUTH.header,
    value: connection.inject_value ?? SERVICE_TOKEN_AUTH.value,
  };
  if (connection.kind === "mcp") {
    const url = new URL(connection.url);
    // streamable HTTP posts messages, opens a GET stream and ends a session with DELETE
    return {
      hosts: [url.hostname],
      port: url.port ? Number(url.port) : 443,
      methods: MCP_METHODS,
      inject,
    };
  }
  return { hosts: connection.hosts, port: 443, methods: connection.methods ?? ["*"], inject };
}

interface ServiceReach {
  hosts: string[];
  port: number;
  methods: string[];
  inject: { header: string; value: string };
}

export const MCP_METHODS = ["GET", "POST", "DELETE"];

/** Rules for a service or MCP connection, one per edge; none when its secret is missing from the vault. */
export function serviceGrants(
  name: string,
  connection: ConnectionConfig,
  source: string,
  vaultDir: string | undefined,
): { grants: ScopedGrant[]; warning?: string } {
  const reach = serviceReach(connection);
  if (!reach) return { grants: [] };
  const hasSecret = vaultDir ? existsSync(join(vaultDir, `${name}.json`)) : true;
  if (!hasSecret) {
    return {
      grants: [],
      warning: `${source}: connection "${name}" is disabled until its credential is stored (data/vault/${name}.json)`,
    };
  }
  const terms = edgeTerms(connection);
  const grants = edgeNames(connection).flatMap((edge) =>
    edgeGrants(
      {
        name: `connection:${name}`,
        verdict: "allow",
        match: { host: reach.hosts, port: reach.port, method: reach.methods },
        inject: {
          credential: name,
          headers: [reach.inject],
        },
        scope: edge === "org" ? "org" : workerSubject(edge),
        source,
      },
      connection.kind === "mcp" ? {} : (connection.grant?.[edge] ?? {}),
      terms,
    ),
  );
  return { grants };
}

/** Problems with a host folder or repo that should stop a config from loading. */
export function mountProblem(connection: ConnectionConfig): string | undefined {
  if (connection.kind !== "host-dir" && connection.kind !== "host-repo") return undefined;
  if (!existsSync(connection.path) || !statSync(connection.path).isDirectory()) {
    return `${connection.path} is not an existing directory`;
  }
  // a gated repo is landed on with update-ref: it must be bare, so no checkout can drift from it
  if (
    connection.kind === "host-repo" &&
    connection.write === "gated" &&
    !(
      existsSync(join(connection.path, "HEAD")) &&
      existsSync(join(connection.path, "objects")) &&
      existsSync(join(connection.path, "refs"))
    )
  ) {
    return `${connection.path} is not a bare git repository (write = "gated" needs one: git clone --bare)`;
  }
  return undefined;
}

export function connectionMount(
  name: string,
  connection: ConnectionConfig,
): ConnectionMount | undefined {
  if (connection.kind === "host-dir") {
    return { name, path: connection.path, readOnly: connection.mode !== "rw", kind: "host-dir" };
  }
  if (connection.kind === "host-repo") {
    // the repo itself is never writable from a box: a gated one is reached through a per-run clone
    return {
      name,
      path: connection.path,
      readOnly: true,
      kind: "host-repo",
      ...(connection.write === "gated"
        ? {
            gated: {
              branch: connection.branch ?? REPO_DEFAULTS.branch,
              allowExecutables: connection.allow_executables ?? false,
              maxFileBytes: connection.max_file_bytes ?? REPO_DEFAULTS.maxFileBytes,
              maxPushBytes: connection.max_push_bytes ?? REPO_DEFAULTS.maxPushBytes,
              maxDeletionsUngated:
                connection.max_deletions_ungated ?? REPO_DEFAULTS.maxDeletionsUngated,
              writeFrom:
                connection.write_from === undefined
                  ? REPO_DEFAULTS.writeFrom
                  : writesFromAny(connection.write_from)
                    ? "any"
                    : "clean",
              scanParticipants: REPO_DEFAULTS.scanParticipants,
            },
          }
        : {}),
    };
  }
  return undefined;
}
