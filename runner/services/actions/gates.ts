import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { RosterError } from "../../ground/errors.ts";
import { replaceFileSync } from "../../ground/files/atomic-replace.ts";
import { withFileLock } from "../../ground/files/file-lock.ts";
import {
  type Gate,
  gateFile,
  gatesDir,
  gateWorker,
  listGates,
} from "../../records/gates/gate-record.ts";

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
  type Gate,
  type GateState,
  gateWorker,
  listGates,
  readGate,
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

/** The parts of a chat send already delivered for this gate (services/chat/sent-parts.ts), so a retry resumes. */
export function sentPartsFile(paths: RosterPaths, gate: Pick<Gate, "worker" | "id">): string {
  return `${gateFile(paths, gate.worker, gate.id)}.sent`;
}
