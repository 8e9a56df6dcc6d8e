import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { appendJsonLine } from "../../ground/files/append-line.ts";

/**
 * A worker's journal: what became of what it proposed. One JSON line per
 * proposal and per disposition in data/workers/<w>/journal/events.jsonl,
 * each line one write() on an O_APPEND descriptor, so concurrent runs and the
 * approval desk never tear a line. Mounted read-only at ~/self/journal in
 * every later run.
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

export function appendJournal(paths: RosterPaths, event: Omit<JournalEvent, "ts">): JournalEvent {
  const line: JournalEvent = { ts: new Date().toISOString(), ...event };
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

/** The last `limit` events (oldest first); a torn or foreign line is skipped, never fatal. */
export function readJournal(paths: RosterPaths, worker: string, limit = 30): JournalEvent[] {
  const file = journalFile(paths, worker);
  if (!existsSync(file)) return [];
  const events: JournalEvent[] = [];
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (!line.trim()) continue;
    try {
      events.push(JSON.parse(line) as JournalEvent);
    } catch {
      // a line cut by a full disk: the rest still reads
    }
  }
  return events.slice(-limit);
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
