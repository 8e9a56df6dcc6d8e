import {
  appendToStoreFile,
  openStoreFile,
  replaceStoreFile,
  StoreFileMissing,
} from "../../boundary/store/copy.ts";
import { lockStoreOf } from "../../boundary/store/snapshots.ts";
import { withStoreLock } from "../../boundary/store/store-lock.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { RosterError } from "../../ground/errors.ts";
import { liveRuns } from "../../records/run-records/live-runs.ts";
import { type MemoryNote, recordOf } from "./notes.ts";
import { MEMORY_FILE } from "./read.ts";

/**
 * The operator's hand on a worker's memory (`roster memory …`, the public
 * roster's `worker memory …`): every change is a line appended to the
 * worker's own file, naming who made it and when, so a correction is
 * recorded, never a silent edit, and the worker reads it as it reads its own
 * lines (a later line with an id replaces every earlier one). Only `compact`
 * rewrites the file, and only while no run of the worker is live and the
 * store's lock is free; the file as it was is kept beside it.
 */

/** The most of the file an edit reads: a file a box made larger is refused, never read whole. */
export const MEMORY_EDIT_MAX_BYTES = 64 * 1024 * 1024;

/** Where `compact` keeps the file as it was before it. */
export const BEFORE_COMPACT = `${MEMORY_FILE}.before-compact`;

/** One record of an id, as the file holds it, oldest first. */
export interface NoteHistoryEntry {
  kind: "note" | "forget";
  text?: string;
  pinned?: boolean;
  by?: string;
  at?: string;
}

export interface MemoryFile {
  /** Each line, as written. */
  lines: string[];
  size: number;
}

/** The whole file, or no lines when there is none yet. */
export async function readMemoryFile(paths: RosterPaths, worker: string): Promise<MemoryFile> {
  let file: Awaited<ReturnType<typeof openStoreFile>>;
  try {
    file = await openStoreFile(paths, worker, MEMORY_FILE);
  } catch (error) {
    if (error instanceof StoreFileMissing) return { lines: [], size: 0 };
    throw error;
  }
  try {
    const { size } = await file.stat();
    if (size > MEMORY_EDIT_MAX_BYTES)
      throw new RosterError(
        `${worker}'s ~/store/${MEMORY_FILE} is ${size} bytes, over the ${MEMORY_EDIT_MAX_BYTES} an edit reads: roster box cp-out ${worker} ${MEMORY_FILE} <file> copies it out`,
        { exitCode: 2 },
      );
    const buffer = Buffer.alloc(size);
    let got = 0;
    while (got < size) {
      const { bytesRead } = await file.read(buffer, got, size - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    const text = buffer.subarray(0, got).toString("utf8");
    return { lines: text.split("\n").filter((line) => line.trim()), size: got };
  } finally {
    await file.close();
  }
}

/** The live notes, oldest first, each with the line that made it what it is. */
export function liveNotes(lines: readonly string[]): Array<{ note: MemoryNote; line: string }> {
  const live = new Map<string, { note: MemoryNote; line: string }>();
  for (const line of lines) {
    const record = recordOf(line);
    if (!record) continue;
    const id = record.kind === "note" ? record.note.id : record.id;
    live.delete(id);
    if (record.kind === "note") live.set(id, { note: record.note, line });
  }
  return [...live.values()];
}

/** Every record of `id`, oldest first, with who wrote it where the line says. */
export function noteHistory(lines: readonly string[], id: string): NoteHistoryEntry[] {
  const history: NoteHistoryEntry[] = [];
  for (const line of lines) {
    const record = recordOf(line);
    if (!record) continue;
    const recordId = record.kind === "note" ? record.note.id : record.id;
    if (recordId !== id) continue;
    const raw = JSON.parse(line) as Record<string, unknown>;
    const by = typeof raw.by === "string" ? raw.by : undefined;
    const at = typeof raw.at === "string" ? raw.at : undefined;
    history.push({
      kind: record.kind,
      ...(record.kind === "note" ? { text: record.note.text, pinned: record.note.pinned } : {}),
      ...(by ? { by } : {}),
      ...(at ? { at } : {}),
    });
  }
  return history;
}

export type MemoryChange =
  | { op: "correct"; text: string }
  | { op: "rm" }
  | { op: "pin" }
  | { op: "unpin" }
  | { op: "disable" }
  | { op: "enable" };

/** The line a change appends, or the reason it can't be made. */
export function changeLine(
  lines: readonly string[],
  id: string,
  change: MemoryChange,
  by: string,
  at: string,
): string {
  const live = liveNotes(lines).find((one) => one.note.id === id)?.note;
  const stamp = { by, at };
  const missing = () =>
    new RosterError(`no note "${id}" is live: roster memory ls lists them`, { exitCode: 2 });
  switch (change.op) {
    case "correct": {
      const text = change.text.trim();
      if (!text) throw new RosterError("the replacement text is empty", { exitCode: 2 });
      if (!live) throw missing();
      return JSON.stringify({ id, text, ...(live.pinned ? { pinned: true } : {}), ...stamp });
    }
    case "pin":
    case "unpin":
      if (!live) throw missing();
      return JSON.stringify({
        id,
        text: live.text,
        ...(change.op === "pin" ? { pinned: true } : {}),
        ...stamp,
      });
    case "rm":
      if (!live) throw missing();
      return JSON.stringify({ id, op: "forget", ...stamp });
    case "disable":
      if (!live) throw missing();
      return JSON.stringify({ id, disabled: true, ...stamp });
    case "enable": {
      if (live) throw new RosterError(`note "${id}" is live already`, { exitCode: 2 });
      const last = noteHistory(lines, id)
        .filter((entry) => entry.kind === "note")
        .at(-1);
      if (!last?.text)
        throw new RosterError(`no note "${id}" was ever written: there is nothing to enable`, {
          exitCode: 2,
        });
      return JSON.stringify({
        id,
        text: last.text,
        ...(last.pinned ? { pinned: true } : {}),
        ...stamp,
      });
    }
  }
}

/** Appends the change's line to the worker's file; returns the line. */
export async function changeNote(
  paths: RosterPaths,
  worker: string,
  id: string,
  change: MemoryChange,
  by: string,
): Promise<string> {
  const { lines } = await readMemoryFile(paths, worker);
  const line = changeLine(lines, id, change, by, new Date().toISOString());
  await appendToStoreFile(paths, worker, MEMORY_FILE, `${line}\n`);
  return line;
}

export interface Compaction {
  before: number;
  kept: number;
  /** Lines that were no record (kept as they were: they are the worker's). */
  other: number;
  bytesBefore: number;
  bytesAfter: number;
}

/**
 * The file rewritten as its live notes (each by its latest line, oldest
 * first) and the lines that are no record, in their order; superseded and
 * forgotten records go. The file as it was is kept at BEFORE_COMPACT.
 */
export async function compactMemory(paths: RosterPaths, worker: string): Promise<Compaction> {
  const live = liveRuns(paths, worker);
  if (live.length)
    throw new RosterError(
      `${worker} has a run going: ${live.join(", ")}; its box writes its memory, so nothing was compacted`,
      { exitCode: 2 },
    );
  return withStoreLock(lockStoreOf(paths, { worker }), 0, async () => {
    const { lines, size } = await readMemoryFile(paths, worker);
    const keep = new Set(liveNotes(lines).map((one) => one.line));
    const after = lines.filter((line) => keep.has(line) || !recordOf(line));
    // one line kept once: the same line written twice is one note's latest
    const seen = new Set<string>();
    const unique = after.filter((line) => {
      if (!recordOf(line)) return true;
      if (seen.has(line)) return false;
      seen.add(line);
      return true;
    });
    const text = unique.length ? `${unique.join("\n")}\n` : "";
    if (size > 0) await replaceStoreFile(paths, worker, BEFORE_COMPACT, `${lines.join("\n")}\n`);
    await replaceStoreFile(paths, worker, MEMORY_FILE, text);
    return {
      before: lines.length,
      kept: unique.length,
      other: unique.filter((line) => !recordOf(line)).length,
      bytesBefore: size,
      bytesAfter: Buffer.byteLength(text),
    };
  });
}
