import { readFileSync } from "node:fs";
import type { TSchema } from "@sinclair/typebox";
import { Value, ValueErrorType } from "@sinclair/typebox/value";
import { parse, TomlError } from "smol-toml";
import { formatSaid } from "./chat-schema.ts";
import { type ConfigError, tomlSyntaxError } from "./config-error.ts";
import { locateLine } from "./locate.ts";

/**
 * One config file: its TOML parsed, then checked against its schema, every
 * problem said in the operator's words with the file, line and field it is
 * at (load.ts reads every file of the config through this).
 */
/** A value of the wrong kind, said in words. */
const KIND_WANTED: Partial<Record<ValueErrorType, string>> = {
  [ValueErrorType.Integer]: "a whole number",
  [ValueErrorType.Number]: "a number",
  [ValueErrorType.String]: "a string (in quotes)",
  [ValueErrorType.Boolean]: "true or false",
  [ValueErrorType.Array]: "a list ([...])",
};

const ARRAY_TABLES = new Set(["grant", "meter", "limit", "action", "trust", "mcp", "test"]);

export interface Parsed<T> {
  value: T;
  text: string;
}

export function readToml(
  file: string,
  display: string,
  errors: ConfigError[],
): Parsed<unknown> | undefined {
  const text = readFileSync(file, "utf8");
  try {
    return { value: parse(text), text };
  } catch (error) {
    if (!(error instanceof TomlError)) throw error;
    errors.push(tomlSyntaxError(error, display));
    return undefined;
  }
}

export function validateToml<T>(
  parsed: Parsed<unknown>,
  display: string,
  schema: TSchema,
  errors: ConfigError[],
): Parsed<T> | undefined {
  const before = errors.length;
  for (const problem of Value.Errors(schema, parsed.value)) {
    const field = problem.path.split("/").filter(Boolean).join(".") || "(top level)";
    const last = problem.path.split("/").at(-1) ?? "";
    let message = problem.message;
    if (
      ARRAY_TABLES.has(last) &&
      problem.value &&
      typeof problem.value === "object" &&
      !Array.isArray(problem.value)
    ) {
      message = `write [[${field}]] (an array of tables), not [${field}]`;
    } else if (problem.type === ValueErrorType.ObjectAdditionalProperties) {
      message = "unknown key";
    } else if (KIND_WANTED[problem.type]) {
      message = `must be ${KIND_WANTED[problem.type]} (found ${JSON.stringify(problem.value)})`;
    } else if (problem.type === ValueErrorType.StringPattern) {
      // the schema's description says what is wanted in words; the pattern is the fallback
      const { description, pattern } = problem.schema as { description?: string; pattern?: string };
      message = `${description ?? `must match ${pattern ?? "its pattern"}`} (found ${JSON.stringify(problem.value)})`;
    } else if (problem.type === ValueErrorType.StringFormat) {
      // a rule a chat platform's declaration fills in (chat-schema.ts)
      const said = formatSaid((problem.schema as { format?: string }).format ?? "");
      message = `${said ?? "must match its rule"} (found ${JSON.stringify(problem.value)})`;
    } else if (problem.type === ValueErrorType.Union) {
      const options = ((problem.schema as { anyOf?: { const?: unknown }[] }).anyOf ?? []).map(
        (option) => option.const,
      );
      const { description } = problem.schema as { description?: string };
      if (options.length && options.every((option) => typeof option === "string")) {
        message = `must be one of ${options.join(", ")} (found ${JSON.stringify(problem.value)})`;
      } else if (description) {
        // a union of shapes says in words what each may be
        message = `${description} (found ${JSON.stringify(problem.value)})`;
      }
    }
    const duplicate = errors
      .slice(before)
      .some((seen) => seen.field === field && seen.message === message);
    if (!duplicate)
      errors.push({ file: display, line: locateLine(parsed.text, problem.path), field, message });
  }
  return errors.length > before ? undefined : (parsed as Parsed<T>);
}
