import { parse, stringify } from "smol-toml";
import { errorMessage, RosterError } from "../../ground/errors.ts";
import type { Recipe } from "./recipes.ts";

/**
 * connections/<name>.toml as text: written the way a person would write it
 * (commented, one key a line, `[grant.<edge>]` tables), and edited for a
 * grant or a revoke by adding or removing one table header, so a hand-edited
 * file keeps its comments and its order. When a file is shaped so that the
 * one-line edit can't express the change (an inline `grant = { … }`), it is
 * re-emitted from its parsed values and the caller says comments were lost.
 */
export interface NewConnection {
  name: string;
  recipe: Recipe;
  hosts: string[];
  /** mcp: the server's endpoint. */
  url?: string;
  path?: string;
  readWrite?: boolean;
  edges: string[];
  /** A service's methods, header or env variable, given instead of the recipe's. */
  shape?: ConnectionShape;
}

/** What `connection add --method / --header / --env` say of a service in place of its recipe. */
export interface ConnectionShape {
  methods?: string[];
  inject?: { header: string; value: string };
  /** The variable a granted box sees, holding a stand-in (ground/config/sentinel.ts). */
  env?: string;
}

const quote = (value: string): string => JSON.stringify(value);
const list = (values: string[]): string => `[${values.map(quote).join(", ")}]`;

export function renderConnection(spec: NewConnection): string {
  const { name, shape } = spec;
  const recipe = {
    ...spec.recipe,
    ...(shape?.methods ? { methods: shape.methods } : {}),
    ...(shape?.inject ? { inject: shape.inject } : {}),
  };
  const lines = [
    `# ${name}: ${recipe.summary}`,
    `# Written by \`roster connection add ${name} --from ${recipe.name}\`; edit it freely.`,
  ];
  if (recipe.note) lines.push(`# ${recipe.note}`);
  if (recipe.kind === "service") {
    lines.push(
      `# The gateway adds ${recipe.inject?.header ?? "the header"} from the vault (data/vault/${name}.json)`,
      "# to requests of the workers granted below; a box never holds the secret.",
      `hosts = ${list(spec.hosts)}`,
      `methods = ${list(recipe.methods ?? ["*"])}`,
    );
    if (shape?.env) lines.push(`env = ${quote(shape.env)}`);
    if (recipe.inject) {
      lines.push(
        `inject_header = ${quote(recipe.inject.header)}`,
        `inject_value = ${quote(recipe.inject.value)}`,
      );
    }
  } else if (recipe.kind === "mcp") {
    lines.push(
      `# The gateway adds ${recipe.inject?.header ?? "the header"} from the vault (data/vault/${name}.json)`,
      "# to requests of the workers granted below; a box never holds the secret.",
      `kind = "mcp"`,
      `url = ${quote(spec.url ?? "")}`,
      `# transport = "sse"   for a server that speaks the older HTTP+SSE transport`,
      `# call_timeout_secs = 60`,
    );
    if (recipe.inject) {
      lines.push(
        `inject_header = ${quote(recipe.inject.header)}`,
        `inject_value = ${quote(recipe.inject.value)}`,
      );
    }
  } else if (recipe.kind === "host-dir") {
    lines.push(
      `kind = "host-dir"`,
      `path = ${quote(spec.path ?? "")}`,
      `mode = ${quote(spec.readWrite ? "rw" : "ro")}`,
    );
  } else if (recipe.kind === "host-repo") {
    lines.push(
      `kind = "host-repo"`,
      `path = ${quote(spec.path ?? "")}`,
      `# write = "gated"   a bare repo: runs may propose pushes (repo_push)`,
    );
  }
  lines.push("", "# Who may use it: [grant.<worker>] for one worker, [grant.org] for all.");
  for (const edge of spec.edges) lines.push(`[grant.${edge}]`);
  return `${lines.join("\n")}\n`;
}

/** The edges a connection file grants, from its text. */
export function edgesOf(text: string, file: string): string[] {
  return Object.keys(grantOf(parseFile(text, file))).sort();
}

export interface Edited {
  text: string;
  /** False when the file had to be re-emitted (its comments did not survive). */
  kept: boolean;
}

/**
 * Adds `[grant.<edge>]`, with the dimensions `scope` names (`servers = […]`);
 * undefined when the file grants it already so. An edge granted with other
 * dimensions has them replaced; a grant naming none leaves an edge as it is.
 */
export function addEdge(
  text: string,
  file: string,
  edge: string,
  {
    scope = {},
    provider,
  }: { scope?: Record<string, string[]>; provider?: string | undefined } = {},
): Edited | undefined {
  const dims = Object.entries(scope);
  // dimensions are the provider's: a file that names none names the recipe it was written from
  if (dims.length && provider) text = withProvider(text, file, provider);
  const before = parseFile(text, file);
  if (edgesOf(text, file).includes(edge)) {
    const held = grantOf(before)[edge];
    if (!dims.length || canonical(held ?? {}) === canonical(scope)) return undefined;
    const cut = removeEdge(text, file, edge);
    if (!cut) return undefined;
    const added = addEdge(cut.text, file, edge, { scope });
    return added && { text: added.text, kept: cut.kept && added.kept };
  }
  const body = dims.map(([dim, ids]) => `${dim} = ${list(ids)}\n`).join("");
  const appended = `${text.endsWith("\n") || text === "" ? text : `${text}\n`}[grant.${edge}]\n${body}`;
  const expected = withEdges(before, (edges) => ({ ...edges, [edge]: scope }));
  if (sameValues(appended, expected)) return { text: appended, kept: true };
  return { text: stringify(expected), kept: false };
}

/** `provider = "<name>"` above the file's first key, unless the file names one. */
function withProvider(text: string, file: string, provider: string): string {
  if (typeof parseFile(text, file).provider === "string") return text;
  const line = `provider = ${quote(provider)}\n`;
  // first among the keys, where a person reads what the file is
  const first = /^[ \t]*[A-Za-z_"'[]/m.exec(text);
  return first
    ? `${text.slice(0, first.index)}${line}${text.slice(first.index)}`
    : `${text}${line}`;
}

/** Removes the `[grant.<edge>]` table; undefined when the file does not grant it. */
export function removeEdge(text: string, file: string, edge: string): Edited | undefined {
  const before = parseFile(text, file);
  if (!edgesOf(text, file).includes(edge)) return undefined;
  const header = new RegExp(
    // the table's header and its one-line keys (an edge's dimensions)
    `^[ \\t]*\\[[ \\t]*grant[ \\t]*\\.[ \\t]*(${edge}|"${edge}"|'${edge}')[ \\t]*\\][ \\t]*(#[^\\n]*)?(\\r?\\n|$)([ \\t]*[a-z_]+[ \\t]*=[^\\n]*(\\r?\\n|$))*`,
    "m",
  );
  const cut = text.replace(header, "");
  const expected = withEdges(before, (edges) => {
    const { [edge]: _gone, ...rest } = edges;
    return rest;
  });
  if (cut !== text && sameValues(cut, expected)) return { text: cut, kept: true };
  return { text: stringify(expected), kept: false };
}

type Table = Record<string, unknown>;

function parseFile(text: string, file: string): Table {
  try {
    return parse(text) as Table;
  } catch (error) {
    throw new RosterError(`${file}: not valid TOML: ${errorMessage(error).split("\n")[0]}`, {
      exitCode: 2,
    });
  }
}

/**
 * A file's edges: its `[grant.*]` tables, or the older keys the public roster
 * wrote (`workers = […]` or its first name `imps`, or `scope = "org"`, with
 * one shared `[restrict]`), which a grant or revoke rewrites as tables.
 */
const OLDER = ["workers", "imps", "scope", "restrict"] as const;

const isTable = (value: unknown): value is Table =>
  typeof value === "object" && value !== null && !Array.isArray(value);

function grantOf(values: Table): Table {
  if (isTable(values.grant)) return values.grant;
  const shared = isTable(values.restrict) ? values.restrict : {};
  const workers = values.workers ?? values.imps;
  if (Array.isArray(workers))
    return Object.fromEntries(
      workers.filter((w): w is string => typeof w === "string").map((w) => [w, { ...shared }]),
    );
  return values.scope === "org" ? { org: { ...shared } } : {};
}

function withEdges(values: Table, change: (edges: Table) => Table): Table {
  const next = change(grantOf(values));
  const rest = Object.fromEntries(
    Object.entries(values).filter(
      ([key]) => key !== "grant" && !(OLDER as readonly string[]).includes(key),
    ),
  );
  return Object.keys(next).length ? { ...rest, grant: next } : rest;
}

function sameValues(text: string, expected: Table): boolean {
  try {
    return canonical(parse(text)) === canonical(expected);
  } catch {
    return false;
  }
}

/** JSON with sorted keys, so two parses of equal TOML compare equal. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value as Table).sort(([a], [b]) => a.localeCompare(b));
    return `{${entries.map(([key, inner]) => `${JSON.stringify(key)}:${canonical(inner)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}
