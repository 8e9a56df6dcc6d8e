import { existsSync, readdirSync, readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { describeSize } from "../../ground/config/store-limits.ts";
import { errorMessage } from "../../ground/errors.ts";
import { replaceFile } from "../../ground/files/atomic-replace.ts";
import { diskUsage, freeShare } from "../../ground/files/disk-usage.ts";
import {
  describeTarget,
  type PassResult,
  type SnapshotReason,
  type StoreTarget,
  snapshotsToKeep,
  storeDir,
  takeSnapshot,
  workerDir,
} from "./snapshots.ts";

/**
 * When snapshots are taken: after a run settles (its store and, for a
 * session, its channel store; what changed goes to the run's record as
 * store-changes.txt) and in the server's daily sweep of every store. Neither
 * ever fails a run or the server: a pass that can't be taken is said and left
 * to the next one.
 */
export const STORE_CHANGES_FILE = "store-changes.txt";

/** How long a settling run waits for a box of the same worker to leave `roster-lock store`. */
const AFTER_RUN_LOCK_WAIT_MS = 30_000;
const SWEEP_LOCK_WAIT_MS = 5 * 60_000;
export const SWEEP_EVERY_MS = 24 * 60 * 60_000;

/** Lines per store in store-changes.txt: a 100,000-file store must not make a 100,000-line record. */
const CHANGE_LINES_MAX = 5_000;

export function formatChanges(result: PassResult): string {
  const { changes } = result;
  const head = result.snapshot
    ? `# ${describeTarget(result.target)}: snapshot ${result.snapshot.name} (${changes.added.length} added, ${changes.changed.length} changed, ${changes.removed.length} removed, ${changes.skipped.length} skipped)`
    : `# ${describeTarget(result.target)}: unchanged, no snapshot`;
  // what was left out first: past the cap, it is the added files that go unlisted
  const lines = [
    ...changes.skipped.map((entry) => `skipped  ${entry.path} (${entry.why})`),
    ...changes.errors.map((line) => `error    ${line}`),
    ...changes.removed.map((path) => `removed  ${path}`),
    ...changes.changed.map((path) => `changed  ${path}`),
    ...changes.added.map((path) => `added    ${path}`),
  ];
  const kept = lines.slice(0, CHANGE_LINES_MAX);
  if (lines.length > kept.length) kept.push(`… and ${lines.length - kept.length} more lines`);
  return [head, ...kept].join("\n");
}

/** One line for a log: what a pass did. */
export function passSummary(result: PassResult): string {
  const skipped = result.changes.skipped;
  const skippedText = skipped.length
    ? `; skipped ${skipped
        .slice(0, 5)
        .map((entry) => `${entry.path} (${entry.why})`)
        .join(", ")}${skipped.length > 5 ? ` and ${skipped.length - 5} more` : ""}`
    : "";
  return result.snapshot
    ? `${describeTarget(result.target)}: snapshot ${result.snapshot.name} (${result.snapshot.added} added, ${result.snapshot.changed} changed, ${result.snapshot.removed} removed)${skippedText}`
    : `${describeTarget(result.target)}: unchanged${skippedText}`;
}

async function pass(
  paths: RosterPaths,
  target: StoreTarget,
  reason: SnapshotReason,
  waitMs: number,
  note: (text: string) => void,
  run?: string,
): Promise<PassResult | undefined> {
  try {
    return await takeSnapshot(paths, target, {
      reason,
      keep: snapshotsToKeep(paths),
      waitMs,
      ...(run ? { run } : {}),
    });
  } catch (error) {
    note(`${describeTarget(target)} was not snapshotted: ${errorMessage(error)}`);
    return undefined;
  }
}

/**
 * After a run: snapshots what it changed and writes store-changes.txt into its
 * record folder when anything did (or anything was skipped). Never throws.
 */
export async function snapshotAfterRun(options: {
  paths: RosterPaths;
  worker: string;
  run: string;
  runDir: string;
  channel?: string | undefined;
  note: (text: string) => void;
  /** `[store] max_size`: a store over it is not kept (the snapshots before it stay). */
  maxBytes?: number;
  /** `[store] reserve`: no snapshot is taken while its filesystem is under it. */
  reserve?: number;
}): Promise<void> {
  const { paths, worker, run, runDir, channel, note } = options;
  const targets: StoreTarget[] = [{ worker }, ...(channel ? [{ worker, channel }] : [])];
  const reports: string[] = [];
  for (const target of targets) {
    const over = await overflow(paths, target, options.maxBytes, options.reserve);
    if (over) {
      reports.push(over);
      note(over);
      continue;
    }
    const result = await pass(paths, target, "run", AFTER_RUN_LOCK_WAIT_MS, note, run);
    if (!result) continue;
    if (result.snapshot || result.changes.skipped.length || result.changes.errors.length)
      reports.push(formatChanges(result));
    if (result.changes.skipped.length) note(passSummary(result));
  }
  if (reports.length)
    await writeFile(join(runDir, STORE_CHANGES_FILE), `${reports.join("\n\n")}\n`).catch(
      (error: unknown) => note(`${STORE_CHANGES_FILE} was not written: ${errorMessage(error)}`),
    );
}

/** Why a store over its limit is not snapshotted, or undefined when it is within it. */
async function overflow(
  paths: RosterPaths,
  target: StoreTarget,
  maxBytes: number | undefined,
  reserve: number | undefined,
): Promise<string | undefined> {
  const dir = storeDir(paths, target);
  if (reserve !== undefined) {
    // snapshots count against the host: none is taken from the reserve kept for every worker
    const free = await freeShare(dir).catch(() => 1);
    if (free < reserve)
      return `${describeTarget(target)}: not snapshotted: its filesystem is down to ${(free * 100).toFixed(1)}% free, under the ${(reserve * 100).toFixed(0)}% kept for every worker ([store] reserve); the snapshots before it are kept`;
  }
  if (maxBytes === undefined) return undefined;
  const [size = 0] = await diskUsage([dir]);
  if (size <= maxBytes) return undefined;
  return `${describeTarget(target)}: not snapshotted: it holds ${describeSize(size)}, over its ${describeSize(maxBytes)} limit ([store] max_size); the snapshots before it are kept`;
}

/** Every store and channel store of the deployment's workers. */
export function everyStore(paths: RosterPaths): StoreTarget[] {
  const root = join(paths.data, "workers");
  if (!existsSync(root)) return [];
  const out: StoreTarget[] = [];
  for (const worker of readdirSync(root).sort()) {
    if (existsSync(join(workerDir(paths, worker), "store"))) out.push({ worker });
    const channels = join(workerDir(paths, worker), "channel-stores");
    if (existsSync(channels))
      for (const channel of readdirSync(channels).sort()) out.push({ worker, channel });
  }
  return out;
}

/** One sweep of every store; returns what each pass did. */
export async function sweepStores(
  paths: RosterPaths,
  note: (text: string) => void,
): Promise<PassResult[]> {
  const out: PassResult[] = [];
  for (const target of everyStore(paths)) {
    const result = await pass(paths, target, "sweep", SWEEP_LOCK_WAIT_MS, note);
    if (result) out.push(result);
    if (result?.snapshot || result?.changes.skipped.length) note(`sweep: ${passSummary(result)}`);
  }
  return out;
}

/**
 * The server's daily sweep: due when the last one (state/store-sweep.json)
 * is a day old; runs in the background, one at a time, never in the way of a tick.
 */
export class StoreSweep {
  private running = false;

  constructor(
    private readonly paths: RosterPaths,
    private readonly note: (text: string) => void,
  ) {}

  private get file(): string {
    return join(this.paths.state, "store-sweep.json");
  }

  private due(now: number): boolean {
    try {
      const last = JSON.parse(readFileSync(this.file, "utf8")) as { at?: string };
      const at = Date.parse(last.at ?? "");
      return Number.isNaN(at) || now - at >= SWEEP_EVERY_MS;
    } catch {
      return true;
    }
  }

  tick(): void {
    if (this.running || !this.due(Date.now())) return;
    this.running = true;
    void (async () => {
      try {
        await replaceFile(this.file, `${JSON.stringify({ at: new Date().toISOString() })}\n`, {
          mode: 0o644,
        });
        await sweepStores(this.paths, this.note);
      } catch (error) {
        this.note(`store sweep: ${errorMessage(error)}`);
      } finally {
        this.running = false;
      }
    })();
  }

  /** Resolves once a sweep in progress has ended (the server waits for it when stopping). */
  async idle(): Promise<void> {
    while (this.running) await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
