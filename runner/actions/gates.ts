import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { RosterPaths } from "../config/paths.ts";
import { workerOfSubject } from "../config/subject.ts";
import { RosterError } from "../errors.ts";
import { replaceFileSync } from "../files/atomic-replace.ts";
import { withFileLock } from "../files/file-lock.ts";

/**
 * Gates: proposals held for a human, durable and frozen. One JSON file per
 * gate in data/workers/<w>/gates/, replaced atomically (write, then rename) on
 * every change. States: pending → approved → executing → executed | failed,
 * and pending → denied. A state change happens only under the gate's lock
 * file (created with O_EXCL, holding the pid), so two desks approving at once
 * execute once; a lock whose process is gone is stale and may be taken over,
 * which is how a crash mid-execute resumes.
 */
export type GateState = "pending" | "approved" | "executing" | "executed" | "failed" | "denied";

export interface Gate {
  id: string;
  worker: string;
  intent: string;
  executor: string;
  /** Frozen at filing: what is approved is exactly what runs. */
  payload: unknown;
  rationale: string;
  run_id: string | null;
  task_id: string | null;
  state: GateState;
  filed_at: string;
  decided_by?: string;
  decided_at?: string;
  decision_note?: string;
  executed_at?: string;
  result?: unknown;
  error?: string;
  /** Frozen from the grant at filing: a decided gate files a continuation task. */
  wake_on_resolve?: boolean;
}

export const TERMINAL: ReadonlySet<GateState> = new Set(["executed", "denied"]);

function gatesDir(paths: RosterPaths, worker: string): string {
  return join(paths.data, "workers", worker, "gates");
}

function gateFile(paths: RosterPaths, worker: string, id: string): string {
  return join(gatesDir(paths, worker), `${id}.json`);
}

export function newGateId(): string {
  return `g-${randomBytes(4).toString("hex")}`;
}

/** The worker's folder name from a gate's subject ("org/elf" → "elf"). */
export function gateWorker(gate: Pick<Gate, "worker">): string {
  return workerOfSubject(gate.worker);
}

export function writeGate(paths: RosterPaths, gate: Gate): void {
  const dir = gatesDir(paths, gateWorker(gate));
  mkdirSync(dir, { recursive: true });
  const file = gateFile(paths, gateWorker(gate), gate.id);
  // on disk before anyone is told "pending"
  replaceFileSync(file, `${JSON.stringify(gate, null, 2)}\n`);
}

export function readGate(paths: RosterPaths, worker: string, id: string): Gate | undefined {
  try {
    return JSON.parse(readFileSync(gateFile(paths, worker, id), "utf8")) as Gate;
  } catch {
    return undefined;
  }
}

/** Every gate (of one worker, or of all), oldest first. */
export function listGates(paths: RosterPaths, worker?: string): Gate[] {
  const workersDir = join(paths.data, "workers");
  const workers = worker ? [worker] : existsSync(workersDir) ? readdirSync(workersDir) : [];
  const gates: Gate[] = [];
  for (const name of workers) {
    const dir = gatesDir(paths, name);
    if (!existsSync(dir)) continue;
    for (const entry of readdirSync(dir)) {
      if (!/^g-[0-9a-f]+\.json$/.test(entry)) continue;
      const gate = readGate(paths, name, entry.slice(0, -".json".length));
      if (gate) gates.push(gate);
    }
  }
  return gates.sort((a, b) => a.filed_at.localeCompare(b.filed_at) || a.id.localeCompare(b.id));
}

/** A gate by any unique prefix of its id (with or without the `g-`). */
export function findGate(paths: RosterPaths, prefix: string): Gate {
  const wanted = prefix.startsWith("g-") ? prefix : `g-${prefix}`;
  const matches = listGates(paths).filter((gate) => gate.id.startsWith(wanted));
  if (matches.length === 1 && matches[0]) return matches[0];
  throw new RosterError(
    matches.length
      ? `gate id "${prefix}" is ambiguous: ${matches.map((gate) => gate.id).join(", ")}`
      : `no gate "${prefix}" (roster approvals ls lists them)`,
    { exitCode: 2 },
  );
}

/**
 * Runs `body` holding the gate's lock (see file-lock.ts): two desks approving
 * at once execute once; a lock left by a crashed desk is taken over.
 */
export async function withGateLock<T>(
  paths: RosterPaths,
  gate: Pick<Gate, "worker" | "id">,
  body: () => Promise<T>,
): Promise<T> {
  return withFileLock(`${gateFile(paths, gate.worker, gate.id)}.lock`, `gate ${gate.id}`, body);
}

/** The result an executor returned, kept apart from the gate so a crash after sending can't send twice. */
export function resultMarker(paths: RosterPaths, gate: Pick<Gate, "worker" | "id">): string {
  return `${gateFile(paths, gate.worker, gate.id)}.result`;
}

/** The parts of a chat send already delivered for this gate (executors/sent-parts.ts), so a retry resumes. */
export function sentPartsFile(paths: RosterPaths, gate: Pick<Gate, "worker" | "id">): string {
  return `${gateFile(paths, gate.worker, gate.id)}.sent`;
}
