/**
 * What the approval desk (`roster approvals …`), `roster trust` and `roster
 * inbox` do. Ids may be any unique prefix; `--json` prints what scripts need.
 * The CLI only declares these commands; this module is loaded when one runs.
 */

import { type RosterPaths, rosterPaths } from "../../ground/config/paths.ts";
import { operatorName } from "../../ground/operator.ts";

import type { Gate } from "../../services/actions/gates.ts";

const decidedBy = () => operatorName();

/** `roster approvals ls`: the gates waiting for a decision, or with --all every gate. */
export async function listGatesCommand(flags: {
  all?: boolean;
  worker?: string;
  json?: boolean;
}): Promise<void> {
  const { listGates } = await import("../../services/actions/gates.ts");
  const { gateRow } = await import("../../services/actions/desk-view.ts");
  const gates = listGates(rosterPaths(), flags.worker).filter(
    (gate) => flags.all || gate.state === "pending" || gate.state === "failed",
  );
  if (flags.json) {
    for (const gate of gates) process.stdout.write(`${JSON.stringify(gate)}\n`);
    return;
  }
  if (!gates.length) {
    process.stdout.write(flags.all ? "no gates\n" : "nothing waits for you\n");
    return;
  }
  for (const gate of gates) process.stdout.write(`${gateRow(gate)}\n`);
}

/** `roster approvals show`: exactly what would be sent, and the worker's reason. */
export async function showGateCommand(id: string, flags: { json?: boolean }): Promise<void> {
  const { findGate } = await import("../../services/actions/gates.ts");
  const { showGate } = await import("../../services/actions/desk-view.ts");
  const paths = rosterPaths();
  const gate = findGate(paths, id);
  process.stdout.write(flags.json ? `${JSON.stringify(gate, null, 2)}\n` : showGate(paths, gate));
}

/** `roster approvals approve` / `deny`: decided once, by the operator at this terminal. */
export async function decideGateCommand(
  verb: "approve" | "deny",
  id: string,
  note: string[],
  flags: { json?: boolean },
): Promise<void> {
  const paths = rosterPaths();
  const { findGate } = await import("../../services/actions/gates.ts");
  const { approveGate, denyGate } = await import("../../services/actions/desk.ts");
  const gate = findGate(paths, id);
  const decision = { by: decidedBy(), ...(note.length ? { note: note.join(" ") } : {}) };
  const traced = await traceDecisions(paths);
  let decided: Gate;
  try {
    decided = await (verb === "approve" ? approveGate : denyGate)(paths, gate, decision);
  } finally {
    await traced?.();
  }
  if (flags.json) process.stdout.write(`${JSON.stringify(decided)}\n`);
  else if (decided.state === "executed")
    process.stdout.write(`${decided.id} executed: ${JSON.stringify(decided.result)}\n`);
  else if (decided.state === "denied") process.stdout.write(`${decided.id} denied\n`);
  else process.stdout.write(`${decided.id} failed: ${decided.error ?? "unknown error"}\n`);
  if (decided.state === "failed") process.exitCode = 1;
}

/**
 * With `[telemetry] otlp_endpoint`, what this process journals (approved,
 * denied, executed, failed) goes to the collector as spans under the
 * proposing run, as the server's and the gateway's decisions do; returns
 * what sends them before the command exits. An unreadable config traces
 * nothing and blocks no decision: `roster config check` is where it is said.
 */
async function traceDecisions(paths: RosterPaths): Promise<(() => Promise<void>) | undefined> {
  const { loadConfig } = await import("../../ground/config/load.ts");
  const endpoint = loadConfig(paths.config, { vaultDir: paths.vault }).org.telemetry?.otlp_endpoint;
  const { tracingFor } = await import("../../ground/telemetry/tracing.ts");
  const tracing = await tracingFor(endpoint, "roster");
  if (!tracing) return undefined;
  const { actionSpans } = await import("../../ground/telemetry/action-spans.ts");
  const { watchJournal } = await import("../../records/journal/journal.ts");
  const unwatch = watchJournal(actionSpans(tracing));
  return async () => {
    unwatch();
    await tracing.shutdown();
  };
}

/** `roster trust`: what each of a worker's proposals would do, refused on an invalid config. */
export async function trustCommand(worker: string, flags: { json?: boolean }): Promise<void> {
  const paths = rosterPaths();
  const { loadValidConfig } = await import("../../ground/config/valid-config.ts");
  const { formatTrust, trustOf } = await import("../../services/actions/trust-view.ts");
  const { RosterError } = await import("../../ground/errors.ts");
  const config = loadValidConfig(paths);
  if (!config.workers.has(worker))
    throw new RosterError(`no worker named "${worker}"`, { exitCode: 2 });
  const intents = trustOf(paths, config, worker);
  process.stdout.write(flags.json ? `${JSON.stringify(intents)}\n` : formatTrust(worker, intents));
}

/** `roster inbox`: the last messages workers sent the operator. */
export async function inboxCommand(flags: { json?: boolean; limit: string }): Promise<void> {
  const { readInbox } = await import("../../services/actions/desk-view.ts");
  const messages = readInbox(rosterPaths(), Number(flags.limit) || 20);
  if (flags.json) {
    for (const message of messages) process.stdout.write(`${JSON.stringify(message)}\n`);
    return;
  }
  if (!messages.length) process.stdout.write("no messages\n");
  for (const message of messages)
    process.stdout.write(`${message.ts.slice(0, 19)}Z ${message.worker}: ${message.text}\n`);
}
