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
}

const quote = (value: string): string => JSON.stringify(value);
const list = (values: string[]): string => `[${values.map(quote).join(", ")}]`;

export function renderConnection(spec: NewConnection): string {
  const { name, recipe } = spec;
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

/** Adds `[grant.<edge>]`; undefined when the file grants it already. */
export function addEdge(text: string, file: string, edge: string): Edited | undefined {
  const before = parseFile(text, file);
  if (edgesOf(text, file).includes(edge)) return undefined;
  const appended = `${text.endsWith("\n") || text === "" ? text : `${text}\n`}[grant.${edge}]\n`;
  const expected = withEdges(before, (edges) => ({ ...edges, [edge]: {} }));
  if (sameValues(appended, expected)) return { text: appended, kept: true };
  return { text: stringify(expected), kept: false };
}

/** Removes the `[grant.<edge>]` table; undefined when the file does not grant it. */
export function removeEdge(text: string, file: string, edge: string): Edited | undefined {
  const before = parseFile(text, file);
  if (!edgesOf(text, file).includes(edge)) return undefined;
  const header = new RegExp(
    `^[ \\t]*\\[[ \\t]*grant[ \\t]*\\.[ \\t]*(${edge}|"${edge}"|'${edge}')[ \\t]*\\][ \\t]*(#[^\\n]*)?(\\r?\\n|$)`,
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
