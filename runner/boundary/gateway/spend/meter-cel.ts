import type { CelCall, CelProgram } from "../../../ground/config/budget-cel.ts";
import type { RequestFacts } from "../judging/request-facts.ts";
import type { ModelUsage } from "./usage.ts";

/**
 * A meter's CEL run on one call (compiled at load: ground/config/budget-cel.ts).
 * What it returns is checked here, since an expression over dyn values can
 * only be checked when it runs: a `match` must be a bool, an amount a finite
 * number not below 0. An expression that throws (a division by zero, a key
 * `vars` lacks) or returns the wrong thing is a failure the caller notes;
 * it never throws out of here, so a meter can't take the door down.
 */

/** What a call is, for the meters that match it: its facts as judged, and the rule that allowed it. */
export interface MeteredCall
  extends Pick<
    RequestFacts,
    "protocol" | "method" | "host" | "port" | "path" | "query" | "bodySize" | "subject"
  > {
  rule: string | undefined;
  /** The request's MCP facts, for meters that count tool calls. */
  mcp?: RequestFacts["mcp"];
}

/** How a call's answer ended, for the meters that read it: its status, the bytes relayed, a model's usage. */
export interface Answer {
  status: number;
  bytes: number;
  usage?: ModelUsage | undefined;
}

/** The call in the public roster's CEL spelling; built once per call, shared by its meters. */
export function celCall(call: MeteredCall, answer?: Answer): CelCall {
  const usage = answer?.usage;
  return {
    request: {
      protocol: call.protocol,
      method: call.method,
      host: call.host,
      port: BigInt(call.port),
      path: call.path,
      query: call.query,
      bodyBytes: BigInt(call.bodySize),
      mcp: { method: call.mcp?.method ?? "", tool: call.mcp?.tool ?? "" },
    },
    decision: { verdict: "allow", rule: call.rule ?? "" },
    subject: call.subject ?? "org",
    ...(answer
      ? {
          response: { status: BigInt(answer.status), bytes: BigInt(answer.bytes) },
          usage: {
            input: BigInt(usage?.input ?? 0),
            output: BigInt(usage?.output ?? 0),
            cache_read: BigInt(usage?.cache_read ?? 0),
            cache_write: BigInt(usage?.cache_write ?? 0),
            model: usage?.model ?? "",
          },
        }
      : {}),
  };
}

export type CelOutcome<T> = { ok: true; value: T } | { ok: false; why: string };

export function celBool(program: CelProgram, call: CelCall): CelOutcome<boolean> {
  const ran = run(program, call);
  if (!ran.ok) return ran;
  return typeof ran.value === "boolean"
    ? { ok: true, value: ran.value }
    : { ok: false, why: `${JSON.stringify(program.text)} is not a bool` };
}

export function celAmount(program: CelProgram, call: CelCall): CelOutcome<number> {
  const ran = run(program, call);
  if (!ran.ok) return ran;
  const { value } = ran;
  // an int is a bigint; a uint the library's wrapper, whose valueOf is one
  const number =
    typeof value === "object" && value !== null && "valueOf" in value ? value.valueOf() : value;
  const amount =
    typeof number === "number" ? number : typeof number === "bigint" ? Number(number) : Number.NaN;
  return Number.isFinite(amount) && amount >= 0
    ? { ok: true, value: amount }
    : { ok: false, why: `${JSON.stringify(program.text)} is not a number of 0 or more` };
}

function run(program: CelProgram, call: CelCall): CelOutcome<unknown> {
  try {
    return { ok: true, value: program.run(call) };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return {
      ok: false,
      why: `${JSON.stringify(program.text)}: ${message.split("\n")[0] ?? message}`,
    };
  }
}
