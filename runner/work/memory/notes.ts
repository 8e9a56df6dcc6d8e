/**
 * The rules that turn a worker's memory file into the notes a prompt shows.
 * The file is the worker's own (~/store/memory/memory.jsonl), one JSON object
 * per line, appended to as it likes:
 *   {"id": "ann", "text": "Ann runs payments; prefers short answers", "pinned": true}
 *   {"id": "ann", "op": "forget"}            (or "forgotten": true, "disabled": true)
 * A later line with an id replaces every earlier one with that id (and counts
 * as new); a forget drops the id. Pinned notes come first, then the newest,
 * within the [memory] bounds. A line that is not such a record is skipped and
 * counted, never a reason to fail a run. Pure data: no files here.
 */

export interface MemoryNote {
  id: string;
  text: string;
  pinned: boolean;
}

export interface ParsedMemory {
  /** Live notes in the order a prompt shows them: pinned newest first, then the rest newest first. */
  notes: MemoryNote[];
  /** Lines that were not a record (not JSON, not an object, no id, no text). */
  skipped: number;
}

/** A note's text is cut here, so one long note can't crowd out every other. */
export const NOTE_MAX_CHARS = 1000;

export type MemoryRecord =
  | { kind: "note"; note: MemoryNote }
  | { kind: "forget"; id: string }
  | undefined;

/** One line of the file read as a record: a note, a forget, or undefined (not a record). */
export function recordOf(line: string): MemoryRecord {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const record = value as Record<string, unknown>;
  const raw = record.id;
  const id =
    typeof raw === "string"
      ? raw.trim()
      : typeof raw === "number" && Number.isFinite(raw)
        ? String(raw)
        : "";
  if (!id) return undefined;
  // any sign of forgetting wins: a note the worker meant to drop never shows by a typo
  if (record.op === "forget" || record.forgotten || record.disabled) return { kind: "forget", id };
  if (typeof record.text !== "string" || !record.text.trim()) return undefined;
  return { kind: "note", note: { id, text: record.text.trim(), pinned: record.pinned === true } };
}

/** Every line of `text` read as a record; blank lines are neither notes nor skipped. */
export function parseMemory(text: string): ParsedMemory {
  // a Map keeps insertion order; delete-then-set moves a superseded id to the newest place
  const live = new Map<string, MemoryNote>();
  let skipped = 0;
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const parsed = recordOf(line);
    if (!parsed) {
      skipped++;
      continue;
    }
    const id = parsed.kind === "note" ? parsed.note.id : parsed.id;
    live.delete(id);
    if (parsed.kind === "note") live.set(id, parsed.note);
  }
  const newestFirst = [...live.values()].reverse();
  return {
    notes: [...newestFirst.filter((note) => note.pinned), ...newestFirst.filter((n) => !n.pinned)],
    skipped,
  };
}

/** One note as a prompt carries it: a JSON line, so no note can pass for a block header. */
export function noteLine(note: MemoryNote): string {
  const text =
    note.text.length > NOTE_MAX_CHARS
      ? `${note.text.slice(0, NOTE_MAX_CHARS - 60)} […cut: ${note.text.length} characters, the rest is in the file]`
      : note.text;
  return JSON.stringify({ id: note.id, ...(note.pinned ? { pinned: true } : {}), text });
}

/**
 * The notes shown: in order, until `max_notes` are taken or the next one's
 * line would take the lines past `max_chars` (each line and its newline
 * counted). What is left over is counted, not shown.
 */
export function pickNotes(
  notes: readonly MemoryNote[],
  limits: { max_notes: number; max_chars: number },
): { lines: string[]; omitted: number } {
  const lines: string[] = [];
  let size = 0;
  for (const note of notes) {
    if (lines.length >= limits.max_notes) break;
    const line = noteLine(note);
    if (size + line.length + 1 > limits.max_chars) break;
    lines.push(line);
    size += line.length + 1;
  }
  return { lines, omitted: notes.length - lines.length };
}
