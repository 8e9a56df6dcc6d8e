import { AUDIT_FULL_NOTE, AUDIT_FULL_RULE, type DecisionRecord } from "../audit/audit.ts";
import { DOOR_CAP_RULE } from "../doors/run-doors.ts";
import { ACTION_HOST_RULE, ACTIONS_HOST } from "../exchange/action-host.ts";
import { WRONG_RUN_RULE } from "../exchange/caller.ts";
import { GATE_NOT_HELD, JSON_RPC_ANSWERED } from "../exchange/mcp-exchange.ts";
import { NOT_JUDGED } from "../exchange/ruling.ts";
import { UNREAD_RULE } from "../exchange/server.ts";
import { SENTINEL_LEAK_RULE } from "../judging/sentinel.ts";
import { SSRF_REFUSED } from "../upstream/ssrf.ts";

/**
 * What an audit line says the policy decided, for `roster policy replay`:
 * the verdict and rule the grants gave it, told apart from what the door
 * refused for other reasons (those are not the policy's, and a replay can't
 * judge them again: it counts them with the reason). The line's own verdict
 * is what happened, which is not always what the grants said: a budget, a
 * missing credential or a failed upstream refuses a request its rule
 * allowed (audited as `allow` with a note), the SSRF guard refuses one its
 * rule allowed once the name resolves, and the desk may fail to take a call
 * a gate grant held.
 */

/** `intercept`: a CONNECT no tunnel grant passes, whose requests are judged one by one inside. */
export type ReplayVerdict = "allow" | "deny" | "gate" | "tunnel" | "intercept";

export interface Decided {
  verdict: ReplayVerdict;
  /** The deciding rule; null when none matched (a default deny) or none is needed (intercepted). */
  rule: string | null;
}

export type LineSays = { kind: "decided"; decided: Decided } | { kind: "not"; reason: string };

const decided = (verdict: ReplayVerdict, rule: string | null): LineSays => ({
  kind: "decided",
  decided: { verdict, rule },
});
const not = (reason: string): LineSays => ({ kind: "not", reason });

/** Refusals made under a rule of the door's own, not a grant: why each is not the policy's. */
const DOORS_OWN: Record<string, string> = {
  [AUDIT_FULL_RULE]: "the run's share of the audit log was full",
  closed: "a host service no box may reach, whatever the grants say",
  [UNREAD_RULE]: "not a request the door could read",
  [DOOR_CAP_RULE]: "the box's door was at its connection cap",
  [WRONG_RUN_RULE]: "its proxy token was not its run's",
  // the tripwire reads credential headers the log redacts
  [SENTINEL_LEAK_RULE]: "the sentinel tripwire, which reads what the log redacts",
};

/** Notes of refusals no grant was asked about (rule null): why each is not the policy's. */
const NOTES: Array<[string, string]> = [
  ["body too large", "its body was over the size the door reads"],
  ["request bodies held for judging", "the door's budget for bodies was full"],
  ["fronting", "its Host header named another host than its tunnel's"],
  [NOT_JUDGED.broken, "the config was broken then: everything was denied"],
  [NOT_JUDGED.batch, "a JSON-RPC batch, refused whatever the grants say"],
  [NOT_JUDGED.unreadable, "an MCP body the door couldn't read, refused whatever the grants say"],
];

export const ACTION_HOST_REASON = "the action host: its own grants decide (roster approvals)";

export function whatTheLineSays(record: DecisionRecord): LineSays {
  const { request } = record;
  if (request.host === ACTIONS_HOST || record.rule === ACTION_HOST_RULE)
    return not(ACTION_HOST_REASON);
  const own = record.rule !== null ? DOORS_OWN[record.rule] : undefined;
  if (own) return not(own);
  const note = ownNote(record.note);
  // a CONNECT is written only when a tunnel grant passed it (then refused, perhaps, by the SSRF guard)
  if (request.method === "CONNECT")
    return record.rule !== null && (record.verdict === "tunnel" || record.verdict === "deny")
      ? decided("tunnel", record.rule)
      : not("a CONNECT no tunnel grant decided");
  if (record.verdict === "allow")
    return record.rule !== null ? decided("allow", record.rule) : not("an allow with no rule");
  if (record.verdict === "gate")
    return record.rule !== null ? decided("gate", record.rule) : not("a gate with no rule");
  if (record.verdict !== "deny") return not(`a ${record.verdict} of a request inside a tunnel`);
  if (record.rule === null) {
    if (note)
      return not(
        NOTES.find(([start]) => note.startsWith(start))?.[1] ??
          "refused by the door before any grant was asked",
      );
    // a batch's refusal, written before refusals no grant decided carried a note
    if (record.status === 400) return not("a JSON-RPC batch, refused whatever the grants say");
    return decided("deny", null);
  }
  if (note?.startsWith(GATE_NOT_HELD)) return decided("gate", record.rule);
  // the grant allowed it; the name then resolved to an internal address
  if (note?.includes(SSRF_REFUSED)) return decided("allow", record.rule);
  if (note) return not("refused after its rule allowed it, for a reason the grants don't decide");
  return decided("deny", record.rule);
}

/**
 * The note the decision itself wrote: without what the door added on its
 * way out (answered as a JSON-RPC error; the run's audit share full).
 */
function ownNote(note: string | undefined): string | undefined {
  if (!note) return undefined;
  let own = note;
  const full = own.indexOf(AUDIT_FULL_NOTE);
  if (full >= 0) own = own.slice(0, full);
  own = own.replace(/(^|; )$/, "");
  if (own.endsWith(JSON_RPC_ANSWERED)) own = own.slice(0, -JSON_RPC_ANSWERED.length);
  own = own.replace(/(^|; )$/, "");
  return own || undefined;
}

/** The request as a person reads it: method and URL (the port shown when it isn't the scheme's). */
export function requestSaid(record: DecisionRecord): string {
  const { request } = record;
  const host = request.host.includes(":") ? `[${request.host}]` : request.host;
  if (request.method === "CONNECT") return `CONNECT ${host}:${request.port}`;
  const port =
    (request.protocol === "https" && request.port === 443) ||
    (request.protocol === "http" && request.port === 80)
      ? ""
      : `:${request.port}`;
  const query = request.query ? `?${request.query}` : "";
  return `${request.method} ${request.protocol}://${host}${port}${request.path}${query}`;
}
