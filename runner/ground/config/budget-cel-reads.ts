import type { ASTNode } from "@marcbachmann/cel-js";

/**
 * What a meter's CEL reads and calls, found in its parsed tree, for what the
 * loader refuses or says of it. The path and query come from the box, so
 * nothing that reads them may cost more than a pass over them:
 * - `matches()` is refused: the library runs it on JavaScript's backtracking
 *   regex engine (it can't be swapped for a linear one), where a pattern like
 *   `(a+)+$` takes exponential time on a string the box chose;
 * - a comprehension (`all`, `exists`, `exists_one`, `map`, `filter`) inside
 *   another's body is refused: each stays one pass over one list.
 * The rest of CEL's string functions are single passes.
 */
export interface CelReads {
  response: boolean;
  usage: boolean;
  matches: boolean;
  nested: boolean;
}

const COMPREHENSIONS = new Set(["all", "exists", "exists_one", "map", "filter"]);

export function celReads(ast: ASTNode): CelReads {
  const reads: CelReads = { response: false, usage: false, matches: false, nested: false };
  const walk = (node: unknown, inside: boolean): void => {
    if (Array.isArray(node)) {
      for (const item of node) walk(item, inside);
      return;
    }
    if (typeof node !== "object" || node === null || !("op" in node)) return;
    const { op, args } = node as { op: string; args: unknown };
    if (op === "id" && args === "response") reads.response = true;
    if (op === "id" && args === "usage") reads.usage = true;
    if ((op === "call" || op === "rcall") && Array.isArray(args)) {
      const name = args[0];
      if (name === "matches") reads.matches = true;
      const comprehension = op === "rcall" && typeof name === "string" && COMPREHENSIONS.has(name);
      if (comprehension && inside) reads.nested = true;
      if (comprehension) {
        // the list it runs over is outside it; its body is inside
        walk(args[1], inside);
        walk(args.slice(2), true);
        return;
      }
    }
    if (Array.isArray(args)) walk(args, inside);
    else walk(args, inside);
  };
  walk(ast, false);
  return reads;
}

/** Why the loader refuses an expression for what it reads, if it does. */
export function celProblem(reads: CelReads): string | undefined {
  if (reads.matches)
    return "matches() is refused in a meter: its regex engine can take exponential time on a path or query the box chose; use startsWith, endsWith or contains";
  if (reads.nested)
    return "a comprehension (all, exists, exists_one, map, filter) inside another is refused in a meter: it would cost the square of a list's length on every call";
  return undefined;
}
