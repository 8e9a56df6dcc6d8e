import { type ASTNode, Environment, type ObjectSchema } from "@marcbachmann/cel-js";
import { parse as parseToml } from "smol-toml";
import { celProblem, celReads } from "./budget-cel-reads.ts";
import type { ConfigError } from "./config-error.ts";
import type { BudgetMeter, BudgetTableMatch } from "./grant-schema.ts";
import { locateLine } from "./locate.ts";

/**
 * A budget meter's CEL, compiled once when the config is loaded: `match` a
 * bool, each `spend` amount a number, over the variables the door gives a
 * call (the public roster's, in its spelling):
 *
 * - `request`: `protocol`, `method`, `host`, `port` (int), `path`, `query`,
 *   `bodyBytes` (int), `mcp` (`method`, `tool`; both "" when the body is no
 *   MCP message, `tool` "" when it is no tool call);
 * - `decision`: `verdict` ("allow": only allowed calls are metered), `rule`;
 * - `subject`: who calls, `org/<worker>`;
 * - `vars`: `[budget] vars`, typed from its values (a TOML integer is an
 *   int, a float a double), so `vars.price.nope` is refused at load;
 * - `response`: `status` and `bytes` (ints: the bytes relayed to the box);
 * - `usage`: a model call's tokens as its provider reported them (`input`,
 *   `output`, `cache_read`, `cache_write`, ints; `model`), all 0 and "" for
 *   any other call.
 *
 * A meter that reads `response` or `usage` is an answer meter: it spends once
 * the answer has ended, and its currencies' windows are checked before the
 * call is sent (as a model call's `tokens` are). The public roster gives
 * `response` as `{}`, so there such a meter never spends: said at load.
 *
 * The library is @marcbachmann/cel-js: it type-checks an expression against
 * declared variable types (so `request.bodyBytes + "x"`, or a `match` that is
 * not a bool, is a load error naming the file and line), has no dependencies,
 * and evaluates a compiled expression in a few microseconds. @bufbuild/cel
 * is conformance-tested too, but its checker is not exported and typed
 * variables need protobuf descriptors.
 */

/** An expression, compiled: its text, and the function that evaluates it. */
export interface CelProgram {
  text: string;
  run: (context: CelCall) => unknown;
  /** It reads `response` or `usage`, known once the answer has ended. */
  answer?: boolean;
}

/** What one call gives the meters' CEL (`vars` is bound into each program at load). */
export interface CelCall {
  request: {
    protocol: string;
    method: string;
    host: string;
    port: bigint;
    path: string;
    query: string;
    bodyBytes: bigint;
    mcp: { method: string; tool: string };
  };
  decision: { verdict: string; rule: string };
  subject: string;
  /** Only for an answer meter, once the answer has ended. */
  response?: { status: bigint; bytes: bigint };
  usage?: {
    input: bigint;
    output: bigint;
    cache_read: bigint;
    cache_write: bigint;
    model: string;
  };
}

/** A meter ready to spend: a table or CEL match, and each currency's fixed or CEL amount. */
export interface CompiledMeter {
  /** How an audit line names it: its `name`, or `budget.meter.<n>`. */
  label: string;
  /** The table form (as written), when `match` is a table. */
  match?: BudgetTableMatch;
  /** The CEL form, when `match` is a string. */
  when?: CelProgram;
  /** It reads `response` or `usage`: it spends once the answer has ended. */
  answer: boolean;
  spend: { currency: string; amount: number | CelProgram }[];
}

const REQUEST: ObjectSchema = {
  protocol: "string",
  method: "string",
  host: "string",
  port: "int",
  path: "string",
  query: "string",
  bodyBytes: "int",
  mcp: { method: "string", tool: "string" },
};

const USAGE: ObjectSchema = {
  input: "int",
  output: "int",
  cache_read: "int",
  cache_write: "int",
  model: "string",
};

/** Where the meters are written, and where their errors and notices go. */
export interface BudgetFile {
  file: string;
  text: string;
  errors: ConfigError[];
  notices: ConfigError[];
}

/**
 * org.toml's meters compiled: every expression parsed and type-checked once,
 * each problem an error at its file and line naming the field and the
 * expression. A meter with any problem is left out (the config is broken
 * then, and the door refuses everything until it is fixed).
 */
export function compileMeters(meters: BudgetMeter[], at: BudgetFile): CompiledMeter[] {
  if (meters.length === 0) return [];
  const vars = budgetVars(at);
  if (!vars) return [];
  const env = meterEnvironment(vars);
  const compiled: CompiledMeter[] = [];
  meters.forEach((meter, index) => {
    const pointer = `/budget/meter/${index}`;
    const before = at.errors.length;
    const compile = (field: string, text: string, want: Want) =>
      compileOne(env, vars, text, want, { ...at, pointer: `${pointer}/${field}` });
    const when = typeof meter.match === "string" ? compile("match", meter.match, BOOL) : undefined;
    const spend = Object.entries(meter.spend).map(([currency, amount]) => ({
      currency,
      amount: typeof amount === "number" ? amount : compile(`spend/${currency}`, amount, NUMBER),
    }));
    if (at.errors.length > before) return;
    compiled.push({
      label: meter.name ?? `budget.meter.${index}`,
      answer: [when, ...spend.map((entry) => entry.amount)].some(
        (program) => typeof program === "object" && program.answer,
      ),
      ...(typeof meter.match === "object" ? { match: meter.match } : {}),
      ...(when ? { when } : {}),
      spend: spend.flatMap(({ currency, amount }) =>
        amount === undefined ? [] : [{ currency, amount }],
      ),
    });
  });
  return compiled;
}

/** What an expression must be: the CEL types that are, and how to say it. */
interface Want {
  types: string[];
  said: string;
}
const BOOL: Want = { types: ["bool"], said: "a bool" };
const NUMBER: Want = { types: ["int", "uint", "double"], said: "a number (int, uint or double)" };

function meterEnvironment(vars: Record<string, unknown>): Environment {
  return (
    new Environment()
      .registerVariable({ name: "request", schema: REQUEST })
      .registerVariable({ name: "decision", schema: { verdict: "string", rule: "string" } })
      .registerVariable("subject", "string")
      .registerVariable({ name: "response", schema: { status: "int", bytes: "int" } })
      .registerVariable({ name: "usage", schema: USAGE })
      // a variable, not a constant: the library checks a constant's fields only when it runs
      .registerVariable({ name: "vars", schema: schemaOf(vars) })
  );
}

/** One expression: parsed, its reads checked, its type what `want` says (or dyn, checked when it runs). */
function compileOne(
  env: Environment,
  vars: Record<string, unknown>,
  text: string,
  want: Want,
  at: BudgetFile & { pointer: string },
): CelProgram | undefined {
  const refuse = (message: string) =>
    at.errors.push({
      file: at.file,
      line: locateLine(at.text, at.pointer),
      field: fieldOf(at.pointer),
      message: `${JSON.stringify(text)}: ${message}`,
    });
  let program: ReturnType<Environment["parse"]>;
  try {
    program = env.parse(text);
  } catch (error) {
    refuse(`does not parse: ${firstLine(error)}`);
    return undefined;
  }
  const reads = celReads(program.ast as ASTNode);
  const problem = celProblem(reads);
  if (problem) {
    refuse(problem);
    return undefined;
  }
  const checked = program.check();
  if (!checked.valid) {
    const said = firstLine(checked.error);
    // the public roster's evaluator mixes ints and doubles; CEL (and this one) does not
    const mixed = /no such overload: (int \S+ double|double \S+ int)/.test(said)
      ? " (CEL does not mix int and double: write double(…) around the int)"
      : "";
    refuse(`does not type-check: ${said}${mixed}`);
    return undefined;
  }
  const type = checked.type ?? "dyn";
  if (type !== "dyn" && !want.types.includes(type)) {
    refuse(`is ${/^[aeiou]/.test(type) ? "an" : "a"} ${type}; it must be ${want.said}`);
    return undefined;
  }
  if (reads.response)
    at.notices.push({
      file: at.file,
      line: locateLine(at.text, at.pointer),
      field: fieldOf(at.pointer),
      message:
        "reads response, which the public roster gives as {} (there this meter never spends); here it is the answer's status and bytes, spent once the answer has ended",
    });
  return {
    text,
    run: (context) => program({ ...context, vars }),
    ...(reads.response || reads.usage ? { answer: true } : {}),
  };
}

/**
 * `[budget] vars` read again from the text with TOML integers as CEL ints
 * (the loader reads every number as a JS number, which CEL takes as a double).
 */
function budgetVars(at: BudgetFile): Record<string, unknown> | undefined {
  let vars: unknown;
  try {
    const whole = parseToml(at.text, { integersAsBigInt: true }) as {
      budget?: { vars?: unknown };
    };
    vars = whole.budget?.vars ?? {};
  } catch {
    return {}; // the loader has already said why the file does not parse
  }
  const bad = unfit(vars, "vars");
  if (bad) {
    at.errors.push({
      file: at.file,
      line: locateLine(at.text, "/budget/vars"),
      field: `budget.${bad}`,
      message: "vars hold numbers, strings, booleans, lists and tables (no dates)",
    });
    return undefined;
  }
  return vars as Record<string, unknown>;
}

/** The first value CEL can't take (a TOML date), by its dotted path. */
function unfit(value: unknown, path: string): string | undefined {
  if (value instanceof Date) return path;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const bad = unfit(item, `${path}.${i}`);
      if (bad) return bad;
    }
  } else if (typeof value === "object" && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      const bad = unfit(item, `${path}.${key}`);
      if (bad) return bad;
    }
  }
  return undefined;
}

/** The CEL type of each `vars` value, so an expression over them is checked at load. */
function schemaOf(table: Record<string, unknown>): ObjectSchema {
  const schema: ObjectSchema = {};
  for (const [key, value] of Object.entries(table)) {
    if (typeof value === "bigint") schema[key] = "int";
    else if (typeof value === "number") schema[key] = "double";
    else if (typeof value === "string") schema[key] = "string";
    else if (typeof value === "boolean") schema[key] = "bool";
    else if (Array.isArray(value)) schema[key] = "list";
    else if (typeof value === "object" && value !== null)
      schema[key] = schemaOf(value as Record<string, unknown>);
  }
  return schema;
}

const fieldOf = (pointer: string) => pointer.split("/").filter(Boolean).join(".");

function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split("\n")[0] ?? message;
}
