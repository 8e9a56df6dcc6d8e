import { type Static, type TSchema, Type } from "@sinclair/typebox";
import { EdgeScope, Edges, ScopedEdges } from "./grant-schema.ts";
import { McpConnection } from "./mcp-schema.ts";
import { WriteFrom } from "./write-from.ts";

/**
 * connections/*.toml, one schema per kind: a service the gateway injects a
 * credential for, a host folder, a gated host repo, an MCP server. load.ts
 * picks the kind's schema first, so an error names the fields of that kind.
 * Each kind has the form the loader hands on (below) and the form a file may
 * say (`…File`): that one also takes the public roster's spellings, which
 * public-connection.ts reads into the first.
 */

/** connections/<name>.toml: the name is the file stem, the vault credential and the mount name. */
export const ServiceConnection = Type.Object(
  {
    kind: Type.Optional(Type.Literal("service")),
    /** Whose header applies when the file names none, and what an edge may narrow (connection-providers.ts). */
    provider: Type.Optional(
      Type.String({
        pattern: "^[a-z0-9][a-z0-9_-]*$",
        description: "a provider's name: lower-case letters, digits, '_' or '-'",
      }),
    ),
    hosts: Type.Array(Type.String({ minLength: 1 }), { minItems: 1 }),
    methods: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })),
    /** The env variable the box sees (holding a sentinel, never the secret). */
    env: Type.Optional(
      Type.String({
        pattern: "^[A-Z][A-Z0-9_]*$",
        description: "an environment variable name in UPPER_SNAKE case",
      }),
    ),
    inject_header: Type.Optional(Type.String({ pattern: "^[A-Za-z0-9-]+$" })),
    inject_value: Type.Optional(Type.String()),
    grant: Type.Optional(ScopedEdges),
  },
  { additionalProperties: false },
);
export const HostDirConnection = Type.Object(
  {
    kind: Type.Literal("host-dir"),
    path: Type.String({ pattern: "^/", description: "an absolute path" }),
    mode: Type.Optional(Type.Union([Type.Literal("ro"), Type.Literal("rw")])),
    grant: Type.Optional(Edges),
  },
  { additionalProperties: false },
);
/**
 * A host git repository. `write = "gated"` (a bare repo) gives each run a clone
 * of its own and lets the worker propose pushes (repo_push) that the host
 * checks and lands fast-forward only; the limits below bound what a push may
 * carry.
 */
export const HostRepoConnection = Type.Object(
  {
    kind: Type.Literal("host-repo"),
    path: Type.String({ pattern: "^/", description: "an absolute path" }),
    write: Type.Optional(Type.Union([Type.Literal("ro"), Type.Literal("gated")])),
    /** The branch pushes land on (default main). */
    branch: Type.Optional(
      Type.String({ pattern: "^[A-Za-z0-9][A-Za-z0-9._/-]*$", maxLength: 200 }),
    ),
    /** Files with the executable bit may land (default false). */
    allow_executables: Type.Optional(Type.Boolean()),
    /** Largest single file a push may add, in bytes (default 10 MiB). */
    max_file_bytes: Type.Optional(Type.Integer({ minimum: 1 })),
    /** Largest push, bundle and new blobs alike, in bytes (default 100 MiB). */
    max_push_bytes: Type.Optional(Type.Integer({ minimum: 1 })),
    /** More deletions than this need `confirm_bulk_delete`, which always gates (default 20). */
    max_deletions_ungated: Type.Optional(Type.Integer({ minimum: 0 })),
    /**
     * Which runs may push (the clean-room rule, write-from.ts): "clean-room"
     * (default) only runs that carried no conversation content; "any-run"
     * every run, after a scan for the names of that run's conversation
     * participants. Read into one spelling.
     */
    write_from: Type.Optional(Type.Union([Type.Literal("clean-room"), Type.Literal("any-run")])),
    grant: Type.Optional(Edges),
  },
  { additionalProperties: false },
);

/** Who gets it, as the public roster's older files say: `workers = […]`, or `scope = "org"`. */
const WorkerList = Type.Array(
  Type.String({
    pattern: "^[a-z0-9][a-z0-9_-]*$",
    description: "a worker's name",
  }),
  { minItems: 1, uniqueItems: true },
);
const olderEdges = {
  workers: Type.Optional(WorkerList),
  scope: Type.Optional(Type.Literal("org")),
};

/**
 * A service file: `hosts` may be left to a model provider, and the older
 * edges (`workers`, its first name `imps`, `scope = "org"`, one shared
 * `[restrict]`) stand for `[grant.<worker>]` tables.
 */
export const ServiceConnectionFile = Type.Object(
  {
    ...ServiceConnection.properties,
    hosts: Type.Optional(ServiceConnection.properties.hosts),
    ...olderEdges,
    imps: Type.Optional(WorkerList),
    restrict: Type.Optional(EdgeScope),
  },
  { additionalProperties: false },
);
export const HostDirConnectionFile = Type.Object(
  { ...HostDirConnection.properties, ...olderEdges },
  { additionalProperties: false },
);
export const HostRepoConnectionFile = Type.Object(
  {
    ...HostRepoConnection.properties,
    write_from: Type.Optional(WriteFrom),
    ...olderEdges,
  },
  { additionalProperties: false },
);

export const ConnectionConfig = Type.Union([
  ServiceConnection,
  HostDirConnection,
  HostRepoConnection,
  McpConnection,
]);
/** Validated by kind first, so errors speak of the right fields. */
export const CONNECTION_KINDS: Record<string, TSchema> = {
  service: ServiceConnectionFile,
  "host-dir": HostDirConnectionFile,
  "host-repo": HostRepoConnectionFile,
  mcp: McpConnection,
};
export type ConnectionConfig = Static<typeof ConnectionConfig>;
export type ServiceConnectionFile = Static<typeof ServiceConnectionFile>;
export type ConnectionFile =
  | ServiceConnectionFile
  | Static<typeof HostDirConnectionFile>
  | Static<typeof HostRepoConnectionFile>
  | McpConnection;
