import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { workerOfSubject } from "../../ground/config/subject.ts";
import { RosterError } from "../../ground/errors.ts";

/**
 * A gate's record and how it is read: the JSON file per gate in
 * data/workers/<w>/gates/. Filing and deciding gates is the action desk's
 * (actions/gates.ts); reading them is here, below both the desk and the task
 * settlement that reports a run's gates, so neither reaches up for the other.
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

export function gatesDir(paths: RosterPaths, worker: string): string {
  return join(paths.data, "workers", worker, "gates");
}

export function gateFile(paths: RosterPaths, worker: string, id: string): string {
  return join(gatesDir(paths, worker), `${id}.json`);
}

/** The worker's folder name from a gate's subject ("org/elf" → "elf"). */
export function gateWorker(gate: Pick<Gate, "worker">): string {
  return workerOfSubject(gate.worker);
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
  for (const name of workers) for (const gate of gatesIn(gatesDir(paths, name))) gates.push(gate);
  return gates.sort((a, b) => a.filed_at.localeCompare(b.filed_at) || a.id.localeCompare(b.id));
}

/**
 * What this process last read of each gates folder. A worker's gates pile up
 * for as long as it lives and the desk, the action host (on the gateway's
 * loop, which every box's door shares), the console and the metrics all list
 * them: a file is read again only when it was replaced (every gate is written
 * by atomic replace: a new inode), and a folder unchanged since it was read,
 * by more than the file system's timestamp granularity, is not even listed.
 */
interface FolderRead {
  mtimeNs: bigint;
  files: Map<string, { ino: bigint; mtimeNs: bigint; gate: Gate }>;
}
const folders = new Map<string, FolderRead>();
/** A folder changed this recently may change again within one timestamp: it is listed again. */
const SETTLED_NS = 2_000_000_000n;

function gatesIn(dir: string): Gate[] {
  let folder: bigint;
  try {
    folder = statSync(dir, { bigint: true }).mtimeNs;
  } catch {
    folders.delete(dir);
    return [];
  }
  const known = folders.get(dir);
  const settled = BigInt(Date.now()) * 1_000_000n - folder > SETTLED_NS;
  if (known && known.mtimeNs === folder && settled) return copies(known);
  const files: FolderRead["files"] = new Map();
  for (const entry of readdirSync(dir)) {
    if (!/^g-[0-9a-f]+\.json$/.test(entry)) continue;
    const file = join(dir, entry);
    let stat: { ino: bigint; mtimeNs: bigint };
    try {
      stat = statSync(file, { bigint: true });
    } catch {
      continue;
    }
    const before = known?.files.get(entry);
    if (before && before.ino === stat.ino && before.mtimeNs === stat.mtimeNs) {
      files.set(entry, before);
      continue;
    }
    const gate = readGateFile(file);
    if (gate) files.set(entry, { ino: stat.ino, mtimeNs: stat.mtimeNs, gate });
  }
  const read = { mtimeNs: folder, files };
  folders.set(dir, read);
  return copies(read);
}

/** Each gate as a copy of its own: a caller may change what it was handed, never what is kept. */
function copies(read: FolderRead): Gate[] {
  return [...read.files.values()].map(({ gate }) => ({ ...gate }));
}

function readGateFile(file: string): Gate | undefined {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as Gate;
  } catch {
    return undefined;
  }
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

/** The parts of a chat send already delivered for this gate (services/chat/sent-parts.ts), so a retry resumes. */
export function sentPartsFile(paths: RosterPaths, gate: Pick<Gate, "worker" | "id">): string {
  return `${gateFile(paths, gate.worker, gate.id)}.sent`;
}
