import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { replaceFileSync } from "../../ground/files/atomic-replace.ts";
import { readRecord } from "../../records/run-records/run-record.ts";
import { type RunRow, runRow } from "../../work/runs/runs-view.ts";

/**
 * The facts the overview and the runs picture need of every run, kept as an
 * index so a page never reads thousands of run records: a finished record
 * never changes, so each refresh lists the run folders (one readdir per
 * worker) and reads only the records it has not seen finished. Runs still
 * going are read again each time (there are few).
 */
export type RunFact = RunRow;

interface IndexFile {
  version: 1;
  /** "worker/id" → fact, finished runs only */
  done: Record<string, RunFact>;
}

export class RunIndex {
  private done: Map<string, RunFact>;
  private running: RunFact[] = [];

  constructor(
    private readonly stateRoot: string,
    /** Where the finished runs' facts are kept between processes (under state/). */
    private readonly file: string,
  ) {
    this.done = load(file);
  }

  /** Reads what is new; returns how many run records it read. */
  refresh(): number {
    const root = join(this.stateRoot, "runs");
    if (!existsSync(root)) return 0;
    let read = 0;
    let added = false;
    const running: RunFact[] = [];
    const seen = new Set<string>();
    for (const worker of readdirSync(root)) {
      let ids: string[];
      try {
        ids = readdirSync(join(root, worker));
      } catch {
        continue; // not a folder
      }
      for (const id of ids) {
        const key = `${worker}/${id}`;
        seen.add(key);
        if (this.done.has(key)) continue;
        const record = readRecord(join(root, worker, id));
        read++;
        if (!record) continue;
        const fact = runRow(record);
        if (record.state === "running") running.push(fact);
        else {
          this.done.set(key, fact);
          added = true;
        }
      }
    }
    // a run folder removed (a worker archived) leaves the index too
    let removed = false;
    for (const key of this.done.keys())
      if (!seen.has(key)) {
        this.done.delete(key);
        removed = true;
      }
    this.running = running;
    if (added || removed) {
      // its folder is made on first need: a fresh deployment has none yet
      mkdirSync(dirname(this.file), { recursive: true, mode: 0o700 });
      replaceFileSync(
        this.file,
        JSON.stringify({ version: 1, done: Object.fromEntries(this.done) } satisfies IndexFile),
      );
    }
    return read;
  }

  /** Every run known, newest first. */
  all(): RunFact[] {
    return [...this.running, ...this.done.values()].sort((a, b) =>
      b.started_at.localeCompare(a.started_at),
    );
  }

  /** The runs going now. */
  live(): RunFact[] {
    return this.running;
  }
}

function load(file: string): Map<string, RunFact> {
  if (!existsSync(file)) return new Map();
  try {
    const data = JSON.parse(readFileSync(file, "utf8")) as Partial<IndexFile>;
    if (data.version === 1 && data.done && typeof data.done === "object")
      return new Map(Object.entries(data.done));
  } catch {
    // an unreadable index is built again from the records
  }
  return new Map();
}
