/**
 * What an MCP server says about its tools, made safe to hand to pi and to the
 * model's provider: a tool name the providers accept (`<server>__<tool>`,
 * [A-Za-z0-9_-], at most 64), and a parameter schema rebuilt from a small,
 * known subset of JSON Schema with bounded depth, width and size. A server is
 * untrusted input: a name or schema built to break registration (or every
 * later model request, which carries all tool schemas) is cut down or skipped,
 * and each cut is reported, never thrown.
 */
import { createHash } from "node:crypto";

export const MAX_TOOL_NAME = 64;
export const MAX_TOOLS_PER_SERVER = 128;
const MAX_DEPTH = 6;
const MAX_PROPERTIES = 64;
const MAX_ENUM = 100;
const MAX_VARIANTS = 8;
const MAX_TEXT = 500;
const MAX_DESCRIPTION = 1500;
const MAX_SCHEMA_CHARS = 16_000;
/** Anthropic's rule for property names; OpenAI takes these too. */
const PROPERTY_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const TYPES = new Set(["string", "number", "integer", "boolean", "object", "array", "null"]);
const NUMERIC = [
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "minLength",
  "maxLength",
  "minItems",
  "maxItems",
] as const;

export type JsonSchema = Record<string, unknown>;

/** A tool as registered: the name pi and the model see, the name the server knows. */
export interface ShapedTool {
  name: string;
  serverTool: string;
  description: string;
  parameters: JsonSchema;
}

export interface Shaped {
  tools: ShapedTool[];
  /** One line per tool skipped or cut down, for the start-up note. */
  notes: string[];
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** Control characters and line breaks out, length bounded: a name or description shown to the model. */
export function printable(text: string, max: number): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping them is the point
  const flat = text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/**
 * `<server>__<tool>` in the characters providers accept. A name too long keeps
 * its start and gains a short hash of the whole, so two long names stay apart.
 */
export function toolName(server: string, tool: string): string | undefined {
  const safe = tool.replace(/[^A-Za-z0-9_-]+/g, "_").replace(/^_+|_+$/g, "");
  if (!safe) return undefined;
  const full = `${server}__${safe}`;
  if (full.length <= MAX_TOOL_NAME && safe === tool) return full;
  const hash = createHash("sha256").update(tool).digest("hex").slice(0, 8);
  const room = MAX_TOOL_NAME - hash.length - 1;
  return `${full.slice(0, room)}_${hash}`;
}

function validPattern(pattern: string): boolean {
  if (pattern.length > 200) return false;
  try {
    new RegExp(pattern, "u");
    return true;
  } catch {
    return false;
  }
}

function primitive(value: unknown): boolean {
  return (
    value === null ||
    typeof value === "string" ||
    typeof value === "boolean" ||
    (typeof value === "number" && Number.isFinite(value))
  );
}

/** One schema node rebuilt from the keywords we know; anything else is dropped (and counted). */
function clean(node: unknown, depth: number, cuts: Set<string>): JsonSchema {
  if (node === true || node === undefined) return {};
  if (!isRecord(node)) {
    cuts.add("a schema that is not an object");
    return {};
  }
  if (depth > MAX_DEPTH) {
    cuts.add(`nesting deeper than ${MAX_DEPTH}`);
    return {};
  }
  const out: JsonSchema = {};
  const type = node.type;
  if (typeof type === "string" && TYPES.has(type)) out.type = type;
  else if (Array.isArray(type) && type.length > 0 && type.every((t) => TYPES.has(String(t))))
    out.type = type.map(String);
  else if (type !== undefined) cuts.add("an unknown type");
  for (const key of ["description", "title"] as const) {
    const text = node[key];
    if (typeof text === "string") out[key] = printable(text, MAX_TEXT);
  }
  if (Array.isArray(node.enum)) {
    const values = node.enum.filter(primitive).slice(0, MAX_ENUM);
    if (values.length) out.enum = values;
    if (values.length !== node.enum.length) cuts.add(`enum values beyond ${MAX_ENUM} or not plain`);
  }
  if (primitive(node.const)) out.const = node.const;
  for (const key of NUMERIC) {
    const value = node[key];
    if (typeof value === "number" && Number.isFinite(value)) out[key] = value;
  }
  if (typeof node.pattern === "string") {
    if (validPattern(node.pattern)) out.pattern = node.pattern;
    else cuts.add("a pattern that is not a valid regular expression");
  }
  if (isRecord(node.properties)) {
    const properties: Record<string, JsonSchema> = {};
    for (const [name, child] of Object.entries(node.properties)) {
      if (!PROPERTY_NAME.test(name)) {
        cuts.add(`property names outside [A-Za-z0-9_.-]{1,64}`);
        continue;
      }
      if (Object.keys(properties).length >= MAX_PROPERTIES) {
        cuts.add(`more than ${MAX_PROPERTIES} properties`);
        break;
      }
      properties[name] = clean(child, depth + 1, cuts);
    }
    out.properties = properties;
    if (Array.isArray(node.required)) {
      const required = node.required.filter(
        (name): name is string => typeof name === "string" && name in properties,
      );
      if (required.length) out.required = [...new Set(required)];
    }
  }
  if (typeof node.additionalProperties === "boolean")
    out.additionalProperties = node.additionalProperties;
  else if (isRecord(node.additionalProperties))
    out.additionalProperties = clean(node.additionalProperties, depth + 1, cuts);
  if (node.items !== undefined) {
    if (Array.isArray(node.items)) cuts.add("tuple items");
    out.items = Array.isArray(node.items) ? {} : clean(node.items, depth + 1, cuts);
  }
  const variants = Array.isArray(node.anyOf) ? node.anyOf : node.oneOf;
  if (Array.isArray(variants)) {
    if (variants.length > MAX_VARIANTS) cuts.add(`more than ${MAX_VARIANTS} alternatives`);
    const kept = variants.slice(0, MAX_VARIANTS).map((v) => clean(v, depth + 1, cuts));
    if (kept.length) out.anyOf = kept;
  }
  if ("$ref" in node || "allOf" in node || "not" in node) cuts.add("$ref, allOf or not");
  return out;
}

/** A tool's parameters: always an object schema, whatever the server sent. */
export function toolParameters(inputSchema: unknown): { schema: JsonSchema; cuts: string[] } {
  const cuts = new Set<string>();
  const cleaned = clean(inputSchema, 0, cuts);
  if (cleaned.type !== undefined && cleaned.type !== "object")
    cuts.add("a top level that is not an object");
  const schema: JsonSchema = {
    type: "object",
    properties: isRecord(cleaned.properties) ? cleaned.properties : {},
    ...(cleaned.required ? { required: cleaned.required } : {}),
    ...(cleaned.additionalProperties !== undefined
      ? { additionalProperties: cleaned.additionalProperties }
      : {}),
  };
  if (JSON.stringify(schema).length > MAX_SCHEMA_CHARS) {
    // too big to carry in every request: the model passes what the description asks for
    return {
      schema: { type: "object", properties: {}, additionalProperties: true },
      cuts: [...cuts, `a schema over ${MAX_SCHEMA_CHARS} characters (replaced by any object)`],
    };
  }
  return { schema, cuts: [...cuts] };
}

/** A server's tools/list answer, shaped: every tool usable, or skipped with a reason. */
export function shapeTools(server: string, listed: unknown[]): Shaped {
  const tools: ShapedTool[] = [];
  const notes: string[] = [];
  const seen = new Set<string>();
  for (const [index, tool] of listed.entries()) {
    if (tools.length >= MAX_TOOLS_PER_SERVER) {
      notes.push(
        `${server}: ${listed.length - index} more tools skipped (at most ${MAX_TOOLS_PER_SERVER} per server)`,
      );
      break;
    }
    const rawName = isRecord(tool) ? tool.name : undefined;
    if (typeof rawName !== "string" || !isRecord(tool)) {
      notes.push(`${server}: tool #${index} skipped (no name)`);
      continue;
    }
    const shown = printable(rawName, 80);
    const name = toolName(server, rawName);
    if (!name) {
      notes.push(`${server}: tool "${shown}" skipped (no usable characters in its name)`);
      continue;
    }
    if (seen.has(name)) {
      notes.push(`${server}: tool "${shown}" skipped (its name clashes with another as ${name})`);
      continue;
    }
    seen.add(name);
    const { schema, cuts } = toolParameters(tool.inputSchema);
    if (cuts.length)
      notes.push(`${server}: tool ${name}'s parameters simplified (${cuts.join("; ")})`);
    const description =
      typeof tool.description === "string" && tool.description.trim()
        ? printable(tool.description, MAX_DESCRIPTION)
        : `the tool "${shown}"`;
    tools.push({
      name,
      serverTool: rawName,
      description: `[MCP server ${server}] ${description}`,
      parameters: schema,
    });
  }
  return { tools, notes };
}
