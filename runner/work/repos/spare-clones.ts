import { randomBytes } from "node:crypto";
import { mkdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { gitSteps } from "../../ground/git/git.ts";
import { readBranchTip, startBranchAt } from "../../ground/git/refs-on-disk.ts";
import { type AheadClones, type CloneKey, cloneSteps } from "./clone.ts";

/**
 * How long after a run takes (or misses) a worker's spare clone the next one
 * is made. The clone is a host process and a tree written to disk: made at
 * once, it would take the cores the run's own box is starting on.
 */
export const SPARE_AFTER_TAKE_MS = 2_000;

interface Spare {
  key: CloneKey;
  dir: string;
  /** The commit it was cloned at: taken only while the branch is still there. */
  base: string;
}

/**
 * A server's clone of each gated repo a worker's runs start from, made
 * before the run that takes it: the clone was a run's longest step before its
 * box (about 60 ms of the server's start path, most of it host processes).
 * One spare per worker and connection, in `dir` (the server's state): made
 * a while after a run of that worker starts, by the same steps as a run's own
 * clone but its branch; taken by the next run when its key still matches and
 * the canonical branch has not moved since (read from git's files, as the
 * run's branch is then made: no process on the run's path). Anything else is
 * a miss, the spare is dropped and the run clones as before: a run never
 * starts from a stale base.
 * A spare holds a checkout (its objects are the canonical repo's, borrowed);
 * it is removed when taken, stale or the server stops, and the folder is
 * emptied when the next server starts.
 */
export class SpareClones implements AheadClones {
  readonly #spares = new Map<string, Spare>();
  readonly #making = new Map<string, NodeJS.Timeout | Promise<void>>();
  #closed = false;

  constructor(
    private readonly dir: string,
    private readonly delayMs = SPARE_AFTER_TAKE_MS,
  ) {}

  /** How many spares are ready to be taken. */
  get count(): number {
    return this.#spares.size;
  }

  /** Whether a spare is waiting to be made or being made. */
  get making(): boolean {
    return this.#making.size > 0;
  }

  /** Empties the folder a server before this one may have left spares in. */
  async open(): Promise<this> {
    await rm(this.dir, { recursive: true, force: true });
    return this;
  }

  /** A server's spares, kept in its state folder (`state/spare-clones/`), opened. */
  static inState(state: string): Promise<SpareClones> {
    return new SpareClones(join(state, "spare-clones")).open();
  }

  async take(key: CloneKey, dest: string, runBranch: string): Promise<string | undefined> {
    const slot = slotOf(key);
    const spare = this.#spares.get(slot);
    if (!spare) return undefined;
    // taken before any wait: a run starting beside this one can't take it too
    this.#spares.delete(slot);
    if (!sameKey(spare.key, key)) return this.#drop(spare);
    try {
      if (!(await branchedIfCurrent(spare, key, runBranch))) return this.#drop(spare);
      await rename(spare.dir, dest);
    } catch {
      return this.#drop(spare);
    }
    return spare.base;
  }

  want(key: CloneKey): void {
    const slot = slotOf(key);
    if (this.#closed || this.#spares.has(slot) || this.#making.has(slot)) return;
    const timer = setTimeout(() => {
      const made = this.#make(key).finally(() => this.#making.delete(slot));
      this.#making.set(slot, made);
    }, this.delayMs);
    timer.unref();
    this.#making.set(slot, timer);
  }

  /** Stops making spares and removes them all. */
  async close(): Promise<void> {
    this.#closed = true;
    const making = [...this.#making.values()];
    this.#making.clear();
    for (const pending of making) if (!(pending instanceof Promise)) clearTimeout(pending);
    await Promise.all(making.filter((pending) => pending instanceof Promise));
    this.#spares.clear();
    await rm(this.dir, { recursive: true, force: true });
  }

  async #make(key: CloneKey): Promise<void> {
    const dir = join(this.dir, `${key.worker}.${key.connection}.${randomBytes(6).toString("hex")}`);
    try {
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      const base = (await gitSteps(cloneSteps(key, dir))).trim();
      const slot = slotOf(key);
      if (this.#closed || this.#spares.has(slot)) throw new Error("not wanted now");
      this.#spares.set(slot, { key, dir, base });
    } catch {
      // a spare that can't be made is a run that clones for itself, as before
      await rm(dir, { recursive: true, force: true }).catch(() => undefined);
    }
  }

  #drop(spare: Spare): undefined {
    void rm(spare.dir, { recursive: true, force: true }).catch(() => undefined);
    return undefined;
  }
}

/**
 * Whether the spare is still at the tip of its branch, and if so, on the
 * run's branch now. Read from git's files when they are plain (no process:
 * git/refs-on-disk.ts), else asked of git in one process.
 */
async function branchedIfCurrent(spare: Spare, key: CloneKey, runBranch: string): Promise<boolean> {
  const tip = await readBranchTip(key.canonical, key.branch);
  if (tip !== undefined && tip !== spare.base) return false;
  if (tip !== undefined && (await startBranchAt(spare.dir, runBranch, spare.base))) return true;
  const asked = await gitSteps([
    { dir: key.canonical, args: ["rev-parse", "--verify", `refs/heads/${key.branch}^{commit}`] },
    { dir: spare.dir, args: ["checkout", "--quiet", "-b", runBranch] },
  ]);
  return asked.trim() === spare.base;
}

const slotOf = (key: CloneKey) => `${key.worker}\0${key.connection}`;

const sameKey = (a: CloneKey, b: CloneKey) =>
  a.worker === b.worker &&
  a.connection === b.connection &&
  a.canonical === b.canonical &&
  a.branch === b.branch;
