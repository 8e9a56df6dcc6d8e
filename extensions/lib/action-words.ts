/**
 * What the action tools tell the model: every answer of the action host, and
 * every way of not getting one, in plain words that say what happened and
 * what to do next. A tool built on these never throws.
 */
import {
  type ActionsOptions,
  type ActionsReply,
  ActionsUnreachable,
  callActions,
} from "./action-host-client.ts";

export interface ToolAnswer {
  content: { type: "text"; text: string }[];
  details: Record<string, string | number | null>;
  isError?: boolean;
}

const answer = (text: string, details: ToolAnswer["details"], isError = false): ToolAnswer => ({
  content: [{ type: "text", text }],
  details,
  ...(isError ? { isError: true } : {}),
});

const str = (value: unknown): string | undefined =>
  typeof value === "string" && value ? value : undefined;

function flat(value: unknown, max: number): string {
  const text = (typeof value === "string" ? value : (JSON.stringify(value) ?? ""))
    .replace(/\s+/g, " ")
    .trim();
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** A result object as "key: value, key: value", short enough for one line. */
export function summarise(result: unknown): string {
  if (result === undefined || result === null) return "nothing to report";
  if (typeof result !== "object" || Array.isArray(result)) return flat(result, 400);
  const parts = Object.entries(result as Record<string, unknown>).map(
    ([key, value]) =>
      `${key}: ${Array.isArray(value) ? value.map((one) => flat(one, 80)).join(", ") : flat(value, 120)}`,
  );
  return flat(parts.join("; ") || "nothing to report", 400);
}

/** Words for a failure to get any answer from the host. */
export function unreachableWords(error: unknown, filing: boolean): string {
  if (error instanceof ActionsUnreachable && error.timedOut)
    return filing
      ? `error: the action host gave ${error.message}; the proposal may or may not have been filed — call check_gates before proposing it again.`
      : `error: the action host gave ${error.message}.`;
  const message = error instanceof Error ? error.message : String(error);
  return filing
    ? `error: could not reach the action host (${message}); nothing was proposed.`
    : `error: could not reach the action host (${message}).`;
}

/** Words for the host's answer to POST /submit. */
export function proposalWords(tool: string, intent: string, reply: ActionsReply): ToolAnswer {
  const { status, body } = reply;
  const base = { tool, intent, http: status };
  if (body.status === "done")
    return answer(`done: "${intent}" ran. Result: ${summarise(body.result)}.`, {
      ...base,
      outcome: "done",
    });
  if (body.status === "pending") {
    const gate = str(body.gate_id) ?? "(no id)";
    const why = str(body.message)?.split(";")[0]?.trim() || "held for human approval";
    return answer(
      `pending: gate ${gate} — ${why}. Stop here; a human decides; a later run sees the outcome in ~/self/journal. Don't propose it again meanwhile.`,
      { ...base, outcome: "pending", gate_id: gate },
    );
  }
  if (body.status === "denied")
    return answer(
      `denied: ${str(body.reason) ?? "the action host refused this proposal"}. Retrying won't help: only the operator can change which actions you may propose.`,
      { ...base, outcome: "denied" },
      true,
    );
  const error = str(body.error) ?? flat(body, 300);
  if (status === 400 || status === 409)
    return answer(
      `error: ${error}. Nothing was filed; fix that and call ${tool} again.`,
      { ...base, outcome: "error" },
      true,
    );
  if (status === 502)
    return answer(
      `error: "${intent}" ran and failed: ${error}.`,
      { ...base, outcome: "error" },
      true,
    );
  return answer(`error: ${error} (HTTP ${status}).`, { ...base, outcome: "error" }, true);
}

/** Submits a proposal and answers in words; the task id comes from the run's environment. */
export async function propose(
  tool: string,
  intent: string,
  payload: Record<string, unknown>,
  rationale: string | undefined,
  options: ActionsOptions = {},
): Promise<ToolAnswer> {
  const env = options.env ?? process.env;
  const envelope: Record<string, unknown> = { intent, payload: withoutUndefined(payload) };
  if (rationale) envelope.rationale = rationale;
  if (env.ROSTER_TASK_ID) envelope.task_id = env.ROSTER_TASK_ID;
  try {
    return proposalWords(tool, intent, await callActions("POST", "/submit", envelope, options));
  } catch (error) {
    return answer(unreachableWords(error, true), { tool, intent, outcome: "unreachable" }, true);
  }
}

function withoutUndefined(payload: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(payload).filter(([, value]) => value !== undefined));
}

/** Reports how the run's task ended (POST /outcome). */
export async function reportOutcome(
  status: "completed" | "failed",
  note: string,
  options: ActionsOptions = {},
): Promise<ToolAnswer> {
  const details = { tool: status === "completed" ? "task_complete" : "task_fail", status };
  try {
    const reply = await callActions("POST", "/outcome", { status, note }, options);
    if (reply.status === 200 && reply.body.status === "done")
      return answer(`done: the task is recorded as ${status}.`, { ...details, outcome: "done" });
    if (reply.body.status === "denied")
      return answer(
        `denied: ${str(reply.body.reason) ?? "the action host refused"}. Retrying won't help.`,
        { ...details, outcome: "denied" },
        true,
      );
    const error = str(reply.body.error) ?? flat(reply.body, 300);
    return answer(
      `error: the outcome was not recorded: ${error} (HTTP ${reply.status}). Say how the task ended in your final answer instead.`,
      { ...details, outcome: "error", http: reply.status },
      true,
    );
  } catch (error) {
    return answer(unreachableWords(error, false), { ...details, outcome: "unreachable" }, true);
  }
}

interface GateLine {
  id?: unknown;
  intent?: unknown;
  state?: unknown;
  filed_at?: unknown;
  decided_by?: unknown;
  decided_at?: unknown;
  executed_at?: unknown;
  note?: unknown;
  error?: unknown;
}

interface JournalLine {
  ts?: unknown;
  kind?: unknown;
  intent?: unknown;
  gate_id?: unknown;
  summary?: unknown;
  detail?: unknown;
}

const when = (value: unknown): string =>
  typeof value === "string" ? value.slice(0, 16).replace("T", " ") : "?";

function gateLine(gate: GateLine): string {
  const parts = [`${str(gate.id) ?? "?"} ${str(gate.intent) ?? "?"} ${str(gate.state) ?? "?"}`];
  if (str(gate.decided_by)) parts.push(`by ${gate.decided_by} at ${when(gate.decided_at)}`);
  else parts.push(`filed ${when(gate.filed_at)}`);
  if (str(gate.executed_at)) parts.push(`executed ${when(gate.executed_at)}`);
  let line = parts.join(", ");
  if (str(gate.note)) line += ` — note: ${flat(gate.note, 160)}`;
  if (str(gate.error)) line += ` — error: ${flat(gate.error, 160)}`;
  return line;
}

function journalLine(event: JournalLine): string {
  const head = [when(event.ts), str(event.kind), str(event.intent), str(event.gate_id)]
    .filter(Boolean)
    .join(" ");
  const tail = [
    str(event.summary) ? flat(event.summary, 100) : undefined,
    event.detail !== undefined ? summarise(event.detail) : undefined,
  ].filter(Boolean);
  return tail.length ? `${head} — ${tail.join(" — ")}` : head;
}

/** This worker's gates and the recent journal, as short lines (GET /gates and GET /journal). */
export async function gatesReport(
  options: ActionsOptions = {},
  limits = { gates: 20, events: 10 },
): Promise<ToolAnswer> {
  try {
    const [gates, journal] = await Promise.all([
      callActions("GET", "/gates", undefined, options),
      callActions("GET", "/journal", undefined, options),
    ]);
    for (const reply of [gates, journal]) {
      if (reply.status !== 200)
        return answer(
          `error: ${str(reply.body.error) ?? str(reply.body.reason) ?? flat(reply.body, 200)} (HTTP ${reply.status}).`,
          { tool: "check_gates", outcome: "error", http: reply.status },
          true,
        );
    }
    const allGates = Array.isArray(gates.body.gates) ? (gates.body.gates as GateLine[]) : [];
    const events = Array.isArray(journal.body.events) ? (journal.body.events as JournalLine[]) : [];
    const shownGates = allGates.slice(-limits.gates);
    const shownEvents = events.slice(-limits.events);
    const pending = allGates.filter((gate) => gate.state === "pending").length;
    const lines = [
      allGates.length
        ? `gates: ${allGates.length} (${pending} pending)${shownGates.length < allGates.length ? `, the last ${shownGates.length}` : ""}, oldest first:`
        : "gates: none — nothing of yours waits for a human.",
      ...shownGates.map(gateLine),
      shownEvents.length
        ? `journal: the last ${shownEvents.length} events, oldest first:`
        : "journal: empty.",
      ...shownEvents.map(journalLine),
    ];
    return answer(lines.join("\n"), {
      tool: "check_gates",
      outcome: "done",
      gates: allGates.length,
      pending,
    });
  } catch (error) {
    return answer(
      unreachableWords(error, false),
      { tool: "check_gates", outcome: "unreachable" },
      true,
    );
  }
}
