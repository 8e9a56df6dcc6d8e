import { join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { appendJsonLine } from "../../ground/files/append-line.ts";
import { linesFromEndAcross } from "../../ground/files/rotation/read-across.ts";

/**
 * A worker's journal: what became of what it proposed. One JSON line per
 * proposal and per disposition in data/workers/<w>/journal/events.jsonl,
 * each line one write() on an O_APPEND descriptor, so concurrent runs and the
 * approval desk never tear a line. Mounted read-only at ~/self/journal in
 * every later run.
 *
 * A box chooses much of what a line says (a proposal's summary, an outcome's
 * note) and how often it proposes, and the journal lives as long as the
 * worker: each line is bounded (JOURNAL_FIELD_CHARS a field) and the file is
 * only ever read from its end (readJournal), never whole. It rotates with
 * `[retention.journal]` (records/retention): readJournal reads on from the
 * live file into the rotated ones beside it, as if they were still one.
 */
export type JournalKind =
  | "action-proposed"
  | "action-refused"
  | "gate-filed"
  | "approved"
  | "denied"
  | "executed"
  | "failed"
  | "outcome-reported"
  | "continuation-filed"
  | "repo-quarantined";

export interface JournalEvent {
  ts: string;
  worker: string;
  run_id: string | null;
  kind: JournalKind;
  intent?: string;
  gate_id?: string;
  /** One line a person (or the worker) can read: what, to whom. */
  summary?: string;
  /** The outcome: a result, an error, a reason or a note. */
  detail?: unknown;
}

export function journalFile(paths: RosterPaths, worker: string): string {
  return join(paths.data, "workers", worker, "journal", "events.jsonl");
}

/** Told of every line this process appends (the action host's decisions as spans, docs/telemetry.md). */
const watchers = new Set<(event: JournalEvent) => void>();

/** Watches what this process appends from now on; returns the unwatch. */
export function watchJournal(watcher: (event: JournalEvent) => void): () => void {
  watchers.add(watcher);
  return () => watchers.delete(watcher);
}

/** The most characters a line's summary or detail keeps (as JSON, for a detail that is not text). */
export const JOURNAL_FIELD_CHARS = 2000;
/** The most of the journal's end a read looks at, however long the worker has lived. */
const READ_BUDGET_BYTES = 4 * 1024 * 1024;

/** A field cut to its bound, saying how much was cut; a detail that is not text is cut as JSON. */
function bounded(value: unknown): unknown {
  if (value === undefined) return undefined;
  const text = typeof value === "string" ? value : JSON.stringify(value);
  if (text === undefined || text.length <= JOURNAL_FIELD_CHARS) return value;
  return `${text.slice(0, JOURNAL_FIELD_CHARS)}… (${text.length - JOURNAL_FIELD_CHARS} more characters cut)`;
}

export function appendJournal(paths: RosterPaths, event: Omit<JournalEvent, "ts">): JournalEvent {
  const line: JournalEvent = { ts: new Date().toISOString(), ...event };
  if (line.summary !== undefined) line.summary = String(bounded(line.summary));
  if (line.detail !== undefined) line.detail = bounded(line.detail);
  // the box reads its journal through a read-only mount, as its own user
  appendJsonLine(journalFile(paths, event.worker), line, { file: 0o644, dir: 0o755 });
  for (const watcher of watchers) {
    try {
      watcher(line);
    } catch {
      // a watcher's failure never undoes what was written
    }
  }
  return line;
}

/**
 * The last `limit` events (oldest first), read from the journal's end (at most
 * READ_BUDGET_BYTES of it, however long it has grown), across its rotated
 * files; a torn or foreign line is skipped, never fatal.
 */
export function readJournal(paths: RosterPaths, worker: string, limit = 30): JournalEvent[] {
  const events: JournalEvent[] = [];
  if (limit <= 0) return events;
  linesFromEndAcross(
    journalFile(paths, worker),
    (line) => {
      try {
        const event = JSON.parse(line) as JournalEvent;
        if (event && typeof event === "object") events.push(event);
      } catch {
        // a line cut by a full disk: the rest still reads
      }
      return events.length < limit;
    },
    READ_BUDGET_BYTES,
  );
  return events.reverse();
}

const OUTCOME_KINDS: ReadonlySet<JournalKind> = new Set([
  "approved",
  "denied",
  "executed",
  "failed",
]);

/**
 * What became of the worker's proposals since `since` (its last run's start),
 * one line each, for the compiled prompt: a worker that proposed and stopped
 * learns the answer at its next run without having to look.
 */
export function outcomesSince(
  paths: RosterPaths,
  worker: string,
  since: string | undefined,
): string[] {
  return readJournal(paths, worker, 200)
    .filter((event) => OUTCOME_KINDS.has(event.kind) && (!since || event.ts > since))
    .map((event) => {
      const detail =
        typeof event.detail === "string" ? event.detail : JSON.stringify(event.detail ?? "");
      return `${event.ts.slice(0, 16).replace("T", " ")} ${event.kind} ${event.intent ?? ""}${event.gate_id ? ` (${event.gate_id})` : ""}${detail && detail !== '""' ? `: ${detail}` : ""}`;
    });
}
