import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { replaceFileSync } from "../../ground/files/atomic-replace.ts";
import { withFileLock } from "../../ground/files/file-lock.ts";
import { type Gate, gateFile, gatesDir, gateWorker } from "../../records/gates/gate-record.ts";

/**
 * Gates: proposals held for a human, durable and frozen. One JSON file per
 * gate in data/workers/<w>/gates/, replaced atomically (write, then rename) on
 * every change. States: pending → approved → executing → executed | failed,
 * and pending → denied. A state change happens only under the gate's lock
 * file (created with O_EXCL, holding the pid), so two desks approving at once
 * execute once; a lock whose process is gone is stale and may be taken over,
 * which is how a crash mid-execute resumes. The record and its reading are
 * gates/gate-record.ts; they are handed on here for the desk's callers.
 */
export {
  findGate,
  type Gate,
  type GateState,
  gateWorker,
  listGates,
  readGate,
  sentPartsFile,
  TERMINAL,
} from "../../records/gates/gate-record.ts";

export function newGateId(): string {
  return `g-${randomBytes(4).toString("hex")}`;
}

export function writeGate(paths: RosterPaths, gate: Gate): void {
  const dir = gatesDir(paths, gateWorker(gate));
  mkdirSync(dir, { recursive: true });
  const file = gateFile(paths, gateWorker(gate), gate.id);
  // on disk before anyone is told "pending"
  replaceFileSync(file, `${JSON.stringify(gate, null, 2)}\n`);
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
