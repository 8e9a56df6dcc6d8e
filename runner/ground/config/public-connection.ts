import type { EdgeScopeTerms } from "../chat/terms.ts";
import type { ConfigError } from "./config-error.ts";
import { type ConnectionProvider, connectionProvider } from "./connection-providers.ts";
import type {
  ConnectionConfig,
  ConnectionFile,
  ServiceConnectionFile,
} from "./connection-schema.ts";
import type { EdgeScope, InjectHeader, ScopedEdges } from "./grant-schema.ts";
import { locateLine } from "./locate.ts";
import { publicNotice } from "./public-spelling.ts";
import { writeFromRule } from "./write-from.ts";

/**
 * A connection file as the loader hands it on: the public roster's
 * spellings read with the meaning they have there (docs/coming-from-public-
 * roster.md), into roster's one form. Its edges become `[grant.<worker>]`
 * tables (the older `workers` / `imps` / `scope = "org"` with one shared
 * `[restrict]` are the same edges); `provider` gives the header and, for a
 * model provider, the hosts a file leaves out; an edge's `channels` is its
 * `surfaces`; `write_from` takes one spelling. Where roster holds a thing
 * narrower than the public roster would, or can't take it, a notice says so
 * (public-spelling.ts); what neither roster would take is an error.
 */
export interface ConnectionAt {
  name: string;
  file: string;
  text: string;
  /** The workers there are. */
  workers: readonly string[];
  /** A provider providers.toml declares: its header templates (public-providers.ts). */
  declared?: (provider: string) => InjectHeader[] | undefined;
  errors: ConfigError[];
  notices: ConfigError[];
}

/** The older name of `surfaces` on an edge, still read. */
const OLDER_SURFACES = "channels";
const ID = /^[A-Za-z0-9_-]+$/;

export function readConnectionFile(
  value: ConnectionFile,
  at: ConnectionAt,
): ConnectionConfig | undefined {
  const before = at.errors.length;
  const fail = (pointer: string, field: string, message: string) =>
    at.errors.push({ file: at.file, line: locateLine(at.text, pointer), field, message });
  if (value.kind === "mcp") {
    checkWorkers(Object.keys(value.grant ?? {}), "grant", at, fail);
    return at.errors.length > before ? undefined : value;
  }
  const edges = readEdges(value, at, fail);
  if (value.kind === "host-dir" || value.kind === "host-repo") {
    const { workers: _workers, scope: _scope, ...mount } = value;
    const grant = edges && Object.fromEntries(Object.keys(edges).map((edge) => [edge, {}]));
    if (at.errors.length > before) return undefined;
    if (mount.kind === "host-dir") return { ...mount, ...(grant ? { grant } : {}) };
    // unset stays unset: the clean-room rule (public-config.ts says where the public default differs)
    const { write_from: spelled, ...repo } = mount;
    return {
      ...repo,
      ...(spelled !== undefined ? { write_from: writeFromRule(spelled) } : {}),
      ...(grant ? { grant } : {}),
    };
  }
  const service = readService(value, edges, at, fail);
  return at.errors.length > before ? undefined : service;
}

type Fail = (pointer: string, field: string, message: string) => void;

/** The edges, from `[grant.*]` tables or the older keys; undefined when the file grants no one. */
function readEdges(
  value: Exclude<ConnectionFile, { kind: "mcp" }>,
  at: ConnectionAt,
  fail: Fail,
): ScopedEdges | undefined {
  const service = value.kind === undefined || value.kind === "service";
  const older = service ? (value.workers ?? value.imps) : value.workers;
  const olderKey = value.workers ? "workers" : "imps";
  const restrict = service ? value.restrict : undefined;
  const orgWide = value.scope === "org";
  if (value.grant) {
    checkWorkers(Object.keys(value.grant), "grant", at, fail);
    const first = older ? olderKey : orgWide ? "scope" : restrict ? "restrict" : undefined;
    if (first)
      fail(
        `/${first}`,
        first,
        "write [grant.<worker>] tables or the older workers / scope / [restrict] keys, not both",
      );
    return value.grant;
  }
  if (older && orgWide) fail("/scope", "scope", `write workers = […] or scope = "org", not both`);
  if (older) {
    checkWorkers(older, olderKey, at, fail);
    return Object.fromEntries(older.map((worker) => [worker, restrict ?? {}]));
  }
  if (orgWide) return { org: restrict ?? {} };
  if (restrict)
    fail(
      "/restrict",
      "restrict",
      `[restrict] narrows the edges of workers = […] or scope = "org", and this file has neither: write [grant.<worker>] tables`,
    );
  return undefined;
}

function checkWorkers(edges: readonly string[], key: string, at: ConnectionAt, fail: Fail): void {
  for (const edge of edges) {
    if (edge === "org" || at.workers.includes(edge)) continue;
    if (key === "grant") fail(`/grant/${edge}`, `grant.${edge}`, `no worker named "${edge}"`);
    else fail(`/${key}`, key, `no worker named "${edge}"`);
  }
}

/** A service: its provider's header and hosts, its edges' dimensions checked and said. */
function readService(
  value: ServiceConnectionFile,
  edges: ScopedEdges | undefined,
  at: ConnectionAt,
  fail: Fail,
): ConnectionConfig | undefined {
  const {
    workers: _workers,
    imps: _imps,
    scope: _scope,
    restrict: _restrict,
    grant: _grant,
    hosts: spelledHosts,
    ...rest
  } = value;
  const inline = value.inject_header !== undefined || value.inject_value !== undefined;
  const notice = (message: string) =>
    publicNotice(
      at.notices,
      { file: at.file, text: at.text, pointer: "/provider", field: "provider" },
      message,
    );
  const provider = value.provider ? providerOf(value.provider, at, inline, notice) : undefined;
  const refused = !inline ? provider?.refused : undefined;
  if (refused) notice(refused);
  else if (provider?.differs && !inline) notice(provider.differs);
  const hosts = spelledHosts ?? provider?.modelHosts;
  if (!hosts) {
    fail(
      "/hosts",
      "hosts",
      `needs hosts = ["api.example.com", …]${value.provider ? ` (provider "${value.provider}" is not a model provider, whose API roster would know)` : ""}`,
    );
    return undefined;
  }
  const grant = edges && readScopes(edges, provider, value, at, fail);
  return {
    ...rest,
    hosts,
    ...(!inline && provider?.inject
      ? { inject_header: provider.inject.header, inject_value: provider.inject.value }
      : {}),
    // a provider roster can't take grants nothing: its edges are dropped, said above
    ...(grant ? { grant: refused ? {} : grant } : {}),
  };
}

/** The provider a file names: providers.toml's entry, else ours by that name, else none (said). */
function providerOf(
  name: string,
  at: ConnectionAt,
  inline: boolean,
  notice: (message: string) => void,
): ConnectionProvider | undefined {
  const ours = connectionProvider(name);
  const declared = at.declared?.(name);
  if (declared?.[0]) {
    if (declared.length > 1 && !inline)
      notice(
        `providers.toml gives "${name}" ${declared.length} headers; a connection sends one here, its first (${declared[0].header}): name the one you want with inject_header and inject_value`,
      );
    const { differs: _differs, refused: _refused, ...kept } = ours ?? { name };
    return { ...kept, inject: declared[0] };
  }
  if (!ours && !inline)
    notice(
      `roster knows no provider "${name}": the gateway sends authorization: Bearer {token} from the vault credential "${at.name}"; set inject_header and inject_value to say otherwise`,
    );
  return ours;
}

/** Each edge's dimensions: the provider's own, `channels` read as `surfaces`, and what roster holds of them said. */
function readScopes(
  edges: ScopedEdges,
  provider: ConnectionProvider | undefined,
  value: ServiceConnectionFile,
  at: ConnectionAt,
  fail: Fail,
): ScopedEdges {
  // the older form's edges share one [restrict]: read (and said) once
  const shared = new Map<string, EdgeScope>();
  const out: ScopedEdges = {};
  for (const [edge, spelled] of Object.entries(edges)) {
    const at_ = value.grant
      ? { pointer: `/grant/${edge}`, field: `grant.${edge}` }
      : { pointer: "/restrict", field: "restrict" };
    const known = shared.get(at_.field);
    if (known) {
      out[edge] = known;
      continue;
    }
    const scope = readScope(spelled, provider, value.provider, at_, fail);
    shared.set(at_.field, scope);
    out[edge] = scope;
    const terms = provider?.edgeScope;
    if (terms && Object.keys(scope).length)
      publicNotice(
        at.notices,
        { file: at.file, text: at.text, ...at_ },
        scopeSaid(scope, terms, at.name),
      );
  }
  return out;
}

function readScope(
  spelled: EdgeScope,
  provider: ConnectionProvider | undefined,
  named: string | undefined,
  at: { pointer: string; field: string },
  fail: Fail,
): EdgeScope {
  const scope: EdgeScope = {};
  const terms = provider?.edgeScope;
  for (const [dim, ids] of Object.entries(spelled)) {
    const name = dim === OLDER_SURFACES ? "surfaces" : dim;
    const problem = !terms
      ? `${named ? `provider "${named}" narrows by no dimension` : "a dimension needs the provider that declares it (provider = …)"}: an edge here is an empty table`
      : name !== "servers" && name !== "surfaces"
        ? `provider "${named}" has no dimension "${dim}" (it has: servers, surfaces)`
        : scope[name]
          ? `"channels" is the older name of "surfaces": write one of them`
          : idProblem(name, ids, terms);
    if (problem) fail(`${at.pointer}/${dim}`, `${at.field}.${dim}`, problem);
    else scope[name] = ids;
  }
  return scope;
}

function idProblem(
  dim: "servers" | "surfaces",
  ids: readonly string[],
  terms: EdgeScopeTerms,
): string | undefined {
  for (const id of ids) {
    if (terms.classes.includes(id)) {
      if (dim === "servers") return `"${id}" is a class of surfaces: it belongs in surfaces = […]`;
      continue;
    }
    if (!ID.test(id))
      return `"${id}" is not an id (letters, digits, '_' or '-') nor a class (${terms.classes.join(", ")})`;
  }
  return undefined;
}

/** What roster holds of a narrowed edge, where the public roster would open more. */
function scopeSaid(scope: EdgeScope, terms: EdgeScopeTerms, name: string): string {
  const classes = (scope.surfaces ?? []).filter((entry) => terms.classes.includes(entry));
  const ids = (scope.surfaces ?? []).length - classes.length;
  const servers = (scope.servers ?? []).length;
  const roomClasses = classes.filter((entry) => entry !== "dm");
  const classed = roomClasses.length > 0 && terms.classOf !== undefined;
  const may = [
    ...(ids ? [`${terms.surfacePath}/<id> for the ${count(ids, "channel")} listed`] : []),
    ...(servers ? [`${terms.serverPath}/<id> for the ${count(servers, "server")} listed`] : []),
    ...(classed
      ? [
          `${terms.surfacePath}/<id> for a channel its bot's listener recorded as ${roomClasses.join(" or ")} from the platform's permissions (none recorded: refused)`,
        ]
      : []),
  ];
  const refused = [
    ...(servers ? ["the listed servers' channels by their paths"] : []),
    ...(!classed ? roomClasses.map((entry) => `${entry} channels`) : []),
    ...(classes.length === 0 || classes.includes("dm") ? ["DMs"] : []),
  ];
  return [
    `the box may call ${may.length ? may.join(" and ") : "no channel's or server's path"} (${terms.api.version} only)`,
    ...(refused.length
      ? [
          `roster refuses ${refused.join(" and ")}, which the public roster's door would open, since a request's path shows no channel's server nor whether it is a DM`,
        ]
      : []),
    ...(roomClasses.length && !classed
      ? [
          `a bot listening as "${name}" hears no channel as ${roomClasses.join(" or ")}: roster does not classify these channels`,
        ]
      : []),
  ].join("; ");
}

const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? "" : "s"}`;
