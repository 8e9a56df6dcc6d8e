import { readdirSync } from "node:fs";
import { join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { LEDGER_FLOOR_MS, type LogKind } from "../../ground/config/retention.ts";
import { channelsDir } from "../channels/store.ts";
import { journalFile } from "../journal/journal.ts";

/**
 * Every log that grows for as long the deployment lives, and the kind of
 * retention each gets: the one list the sweep (sweep.ts) and `roster doctor`
 * read. A log not here is bounded some other way: a run's own output by
 * `[box]`'s caps and `runs prune`, a task list's finished tasks by being
 * the state `depends_on` is judged against (nothing of it may go).
 */
export interface GrowingLog {
  file: string;
  kind: LogKind;
  /** Nothing of it younger than this is deleted (the spend ledger's month). */
  floorMs: number;
}

/** The audit logs: the door's decisions, the spend ledger, credential use, webhooks, messages sent. */
const AUDIT_LOGS = [
  "decisions.jsonl",
  "usage.jsonl",
  "credentials.jsonl",
  "webhooks.jsonl",
  "messages.jsonl",
];

const names = (dir: string): string[] => {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
      .sort();
  } catch {
    return [];
  }
};

export function growingLogs(paths: RosterPaths): GrowingLog[] {
  const logs: GrowingLog[] = AUDIT_LOGS.map((name) => ({
    file: join(paths.audit, name),
    kind: "audit",
    floorMs: name === "usage.jsonl" ? LEDGER_FLOOR_MS : 0,
  }));
  for (const worker of names(join(paths.data, "workers")))
    logs.push({ file: journalFile(paths, worker), kind: "journal", floorMs: 0 });
  const channels = channelsDir(paths);
  for (const id of names(channels))
    logs.push({ file: join(channels, id, "messages.jsonl"), kind: "channel", floorMs: 0 });
  return logs;
}
