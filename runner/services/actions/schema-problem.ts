import type { TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";

/**
 * A schema's first complaint about what a box sent, as "field: message": the
 * 400 a model can act on (an envelope, a payload, an outcome report).
 */
export function firstProblem(schema: TSchema, value: unknown, prefix: string): string | undefined {
  const first = Value.Errors(schema, value).First();
  if (!first) return undefined;
  const field = [prefix, ...first.path.split("/").filter(Boolean)].filter(Boolean).join(".");
  return `${field || "(envelope)"}: ${first.message}`;
}
