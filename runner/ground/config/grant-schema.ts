import { type Static, Type } from "@sinclair/typebox";
import { ChannelClass } from "./channel-class-schema.ts";

/**
 * The operator's rules for the gateway: `[[grant]]` in org.toml (applies to
 * every worker, or to those its `workers` lists) and in workers/<w>/worker.toml
 * (deny grants only, applying to that worker). Scope is stamped by the loader,
 * never written by hand.
 */
const OneOrMany = <T extends ReturnType<typeof Type.String> | ReturnType<typeof Type.Integer>>(
  item: T,
) => Type.Union([item, Type.Array(item, { minItems: 1 })]);

/**
 * `gate` holds an MCP `tools/call` for a human: the call becomes a proposal on
 * the approval desk and runs once on approval (only with a `match.mcp`).
 */
export const Verdict = Type.Union([
  Type.Literal("allow"),
  Type.Literal("deny"),
  Type.Literal("tunnel"),
  Type.Literal("gate"),
]);
export type Verdict = Static<typeof Verdict>;

/** JSON-RPC facts of an MCP request: each field one anchored `*` glob or a list of them. */
export const McpMatch = Type.Object(
  {
    method: Type.Optional(OneOrMany(Type.String({ minLength: 1 }))),
    tool: Type.Optional(OneOrMany(Type.String({ minLength: 1 }))),
  },
  { additionalProperties: false },
);
export type McpMatch = Static<typeof McpMatch>;

export const GrantMatch = Type.Object(
  {
    protocol: Type.Optional(OneOrMany(Type.String({ enum: ["http", "https"] }))),
    host: Type.Optional(OneOrMany(Type.String({ minLength: 1 }))),
    port: Type.Optional(OneOrMany(Type.Integer({ minimum: 1, maximum: 65535 }))),
    method: Type.Optional(OneOrMany(Type.String({ minLength: 1 }))),
    pathPrefix: Type.Optional(Type.String({ pattern: "^/" })),
    headerContains: Type.Optional(Type.Record(Type.String(), Type.String())),
    maxBodySize: Type.Optional(Type.Integer({ minimum: 0 })),
    mcp: Type.Optional(McpMatch),
  },
  { additionalProperties: false },
);
export type GrantMatch = Static<typeof GrantMatch>;

export const InjectHeader = Type.Object(
  {
    header: Type.String({ minLength: 1, pattern: "^[A-Za-z0-9-]+$" }),
    value: Type.String(),
    hosts: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
  },
  { additionalProperties: false },
);
export type InjectHeader = Static<typeof InjectHeader>;

export const Inject = Type.Object(
  {
    credential: Type.String({ minLength: 1, pattern: "^[a-z0-9_-]+$" }),
    headers: Type.Optional(Type.Array(InjectHeader, { minItems: 1 })),
  },
  { additionalProperties: false },
);
export type Inject = Static<typeof Inject>;

const grantFields = {
  name: Type.String({ minLength: 1 }),
  verdict: Verdict,
  match: Type.Optional(GrantMatch),
  inject: Type.Optional(Inject),
  /** Only for runs started from these channels (channel-class-schema.ts). */
  channels: Type.Optional(ChannelClass),
};

/** A grant as a worker.toml may write it (the loader accepts only deny grants there). */
export const Grant = Type.Object(grantFields, { additionalProperties: false });
export type Grant = Static<typeof Grant>;

/**
 * A grant in org.toml. `workers` scopes it to the named workers: the way to
 * allow something for one worker, since a worker.toml may only narrow.
 */
export const OrgGrant = Type.Object(
  {
    ...grantFields,
    workers: Type.Optional(
      Type.Array(Type.String({ pattern: "^[a-z0-9][a-z0-9_-]*$" }), {
        minItems: 1,
        uniqueItems: true,
      }),
    ),
  },
  { additionalProperties: false },
);
export type OrgGrant = Static<typeof OrgGrant>;

/**
 * What a meter's table form matches: a call by rule, host, method, or an MCP
 * tool call's method and tool name. It means the same as its CEL twin
 * (`decision.rule == "x" && …`, see budget-cel.ts).
 */
export const BudgetTableMatch = Type.Object(
  {
    rule: Type.Optional(OneOrMany(Type.String())),
    host: Type.Optional(OneOrMany(Type.String())),
    method: Type.Optional(OneOrMany(Type.String())),
    /** Meters MCP calls: by JSON-RPC method and tool name (globs), e.g. `tool = "create_*"`. */
    mcp: Type.Optional(McpMatch),
  },
  { additionalProperties: false },
);
export type BudgetTableMatch = Static<typeof BudgetTableMatch>;

/**
 * A meter: `match` is a table (above) or a CEL expression that must be a bool;
 * each `spend` amount is a fixed number or a CEL expression that must be a
 * number. Expressions are compiled once at load (budget-cel.ts).
 */
export const BudgetMeter = Type.Object(
  {
    name: Type.Optional(Type.String()),
    match: Type.Optional(
      Type.Union([Type.String({ minLength: 1 }), BudgetTableMatch], {
        description: "must be a CEL expression (a string) or a table of rule, host, method and mcp",
      }),
    ),
    spend: Type.Record(
      Type.String(),
      Type.Union([Type.Number({ minimum: 0 }), Type.String({ minLength: 1 })], {
        description: "must be a number of 0 or more, or a CEL expression (a string)",
      }),
    ),
  },
  { additionalProperties: false },
);
export type BudgetMeter = Static<typeof BudgetMeter>;

/**
 * A model's price in US dollars per million tokens; `model` is a glob on the
 * model name the provider reports. Cache reads and writes default to the
 * input price when unset.
 */
export const ModelPrice = Type.Object(
  {
    model: Type.String({ minLength: 1 }),
    input: Type.Number({ minimum: 0 }),
    output: Type.Number({ minimum: 0 }),
    cache_read: Type.Optional(Type.Number({ minimum: 0 })),
    cache_write: Type.Optional(Type.Number({ minimum: 0 })),
  },
  { additionalProperties: false },
);
export type ModelPrice = Static<typeof ModelPrice>;

export const Window = Type.Union([
  Type.Literal("minute"),
  Type.Literal("hour"),
  Type.Literal("day"),
  Type.Literal("month"),
]);
export type Window = Static<typeof Window>;

export const BudgetLimit = Type.Object(
  {
    currency: Type.String({ minLength: 1 }),
    window: Window,
    max: Type.Number({ minimum: 0 }),
  },
  { additionalProperties: false },
);
export type BudgetLimit = Static<typeof BudgetLimit>;

/** A grant with where it came from: the loader stamps scope and source. */
export interface ScopedGrant extends Grant {
  scope: string;
  source: string;
}

export interface ScopedLimit extends BudgetLimit {
  scope: string;
}

const EdgeName = Type.String({
  pattern: "^[a-z0-9][a-z0-9_-]*$",
  description: "lower-case letters, digits, '_' or '-'",
});

/** An edge granting a connection to a worker (`[grant.<worker>]`) or to all (`[grant.org]`). */
export const Edges = Type.Record(EdgeName, Type.Object({}, { additionalProperties: false }));

/**
 * A service connection's edge may narrow it by the dimensions its provider
 * declares (`servers = […]`, `surfaces = […]`: ids, or a platform's class
 * words); an empty edge grants it all. Which names a provider declares is
 * checked by the loader (public-connection.ts), which names them.
 */
export const EdgeScope = Type.Record(
  Type.String({ pattern: "^[a-z][a-z_]*$", description: "a dimension name" }),
  Type.Array(Type.String({ minLength: 1 }), { minItems: 1, uniqueItems: true }),
);
export type EdgeScope = Static<typeof EdgeScope>;

export const ScopedEdges = Type.Record(EdgeName, EdgeScope);
export type ScopedEdges = Static<typeof ScopedEdges>;
