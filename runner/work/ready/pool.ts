import { loadConfig } from "../../ground/config/load.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { workerView } from "../../ground/config/worker-view.ts";
import { errorMessage } from "../../ground/errors.ts";
import { discardReadyBox, makeReadyBox, type ReadyBox } from "./ready-box.ts";
import { movedRepo, readyKey } from "./ready-key.ts";

/**
 * The server's ready boxes (docs/ready-boxes.md): up to `size` per worker
 * that ran lately, each for one run, and one per channel that had a session
 * lately (a session's box mounts its channel, so it is made for that channel). `take` hands out one whose key still
 * matches and whose box still runs, and starts another behind it; anything
 * stale, dead or idle past `idleMs` is discarded. The pool is a faster path
 * to the usual start, never a second one: whatever goes wrong in it, the run
 * starts the usual way.
 */
export interface ReadyPoolOptions {
  paths: RosterPaths;
  env?: NodeJS.ProcessEnv;
  note: (text: string) => void;
  /** Ready boxes kept per worker ([server] ready_boxes), read when used. */
  size: () => number;
  /** How long one waits untaken before it is discarded ([server] ready_idle_secs). */
  idleMs: () => number;
  /** Whether one more box fits under the server's cap now (counting the pool's own). */
  room: () => boolean;
  /**
   * Called after every change of what the pool holds (a box made, taken,
   * evicted, discarded or ended): `server status` must never name a box a
   * run already took or the engine already removed.
   */
  changed?: () => void;
}

/** Whom a ready box is for: a worker's runs, its sessions in one channel, or its `box exec` commands. */
export interface Slot {
  worker: string;
  channel?: string;
  exec?: boolean;
}
const slotKey = (slot: Slot) =>
  slot.exec
    ? `${slot.worker}\u001fexec`
    : slot.channel
      ? `${slot.worker}\u001f#${slot.channel}`
      : slot.worker;

/** How often an idle box's memory is asked of the engine again. */
const MEMORY_EVERY_MS = 30_000;

/**
 * How long after a box is taken its slot's next one waits to be made. The
 * run that took it starts in the next few hundred milliseconds (pi reads the
 * prompt and asks the model); a box made meanwhile (the engine creating a
 * container, pi loading) takes the same cores, and on a small host made a
 * ready run's start a third slower (bench/RESULTS.md).
 */
export const REFILL_AFTER_TAKE_MS = 1_000;

export interface ReadyEntry {
  worker: string;
  channel?: string;
  exec?: boolean;
  run: string;
  container: string;
  made_at: string;
  /** What its box holds now, idle (the engine's count). */
  memory_bytes?: number;
}

export class ReadyPool {
  private readonly ready = new Map<string, ReadyBox[]>();
  /** Boxes being made, per slot: they count toward the cap already. */
  private readonly making = new Map<string, number>();
  /** When each slot last asked for a box: the pool keeps boxes for slots used lately. */
  private readonly lastAsked = new Map<string, { slot: Slot; at: number }>();
  private readonly discarding = new Set<Promise<void>>();
  private readonly memory = new WeakMap<ReadyBox, { at: number; bytes: number | undefined }>();
  /** Slots whose box was just taken: none is made for them until their timer ends (REFILL_AFTER_TAKE_MS). */
  private readonly held = new Map<string, NodeJS.Timeout>();
  /** Slots whose ready boxes a take is checking now: none is made for them until it decides. */
  private readonly checking = new Map<string, number>();
  private closed = false;

  constructor(private readonly options: ReadyPoolOptions) {}

  /**
   * A ready box for this slot's next run, or undefined (none, or none that
   * still matches and runs: those are discarded); another is started behind
   * it unless `refill` is false (a session: its channel wants the next box
   * only when this session ends, see `want`).
   */
  async take(slot: Slot, refill = true): Promise<ReadyBox | undefined> {
    if (this.unpooled(slot)) return undefined;
    const key = slotKey(slot);
    if (refill) this.lastAsked.set(key, { slot, at: Date.now() });
    else this.lastAsked.delete(key);
    const list = this.ready.get(key) ?? [];
    let found: ReadyBox | undefined;
    // while a candidate is checked, a tick makes no box for the slot: the take decides
    this.checking.set(key, (this.checking.get(key) ?? 0) + 1);
    try {
      while (!found && list.length) {
        const candidate = list.shift();
        if (!candidate) break;
        this.changed();
        const why = await this.unfit(candidate);
        if (why) this.discard(candidate, why);
        else found = candidate;
      }
    } finally {
      const left = (this.checking.get(key) ?? 1) - 1;
      if (left > 0) this.checking.set(key, left);
      else this.checking.delete(key);
    }
    // the run that took one gets the host for its start: its slot's next box is made after it
    if (refill && found) this.hold(slot, REFILL_AFTER_TAKE_MS);
    if (refill) this.fill(slot);
    return found;
  }

  /** No box is made for this slot for `ms` (the tick's refill included); then one is. */
  private hold(slot: Slot, ms: number): void {
    const key = slotKey(slot);
    clearTimeout(this.held.get(key));
    const timer = setTimeout(() => {
      this.held.delete(key);
      this.fill(slot);
    }, ms);
    timer.unref();
    this.held.set(key, timer);
  }

  /** This slot will want a box soon (a channel whose session just ended): one is made. */
  want(slot: Slot): void {
    if (this.unpooled(slot)) return;
    this.lastAsked.set(slotKey(slot), { slot, at: Date.now() });
    this.fill(slot);
  }

  /** Boxes the pool holds or is making: they count toward the server's cap. */
  count(): number {
    let total = 0;
    for (const list of this.ready.values()) total += list.length;
    for (const making of this.making.values()) total += making;
    return total;
  }

  /** Gives up the oldest ready box to make room for a run; false if there is none. */
  evictOne(): boolean {
    let oldest: ReadyBox | undefined;
    for (const list of this.ready.values())
      for (const box of list) if (!oldest || box.madeAt < oldest.madeAt) oldest = box;
    if (!oldest) return false;
    this.remove(oldest);
    this.discard(oldest, "room for a run");
    return true;
  }

  /** Discards boxes idle past their time, and refills for workers that asked within it. */
  tick(): void {
    const now = Date.now();
    const idleMs = this.options.idleMs();
    for (const list of this.ready.values())
      for (const box of [...list])
        if (now - box.madeAt > idleMs) {
          this.remove(box);
          this.discard(box, `untaken for ${Math.round(idleMs / 1000)} s`);
        }
    for (const [key, asked] of this.lastAsked) {
      if (now - asked.at > idleMs) this.lastAsked.delete(key);
      else this.fill(asked.slot);
    }
  }

  /**
   * The ready boxes now, with the memory each held when last asked (see
   * `measure`): read at once, so a status written after a change shows it.
   */
  list(): ReadyEntry[] {
    const out: ReadyEntry[] = [];
    for (const list of this.ready.values())
      for (const box of list) {
        const memory = this.memory.get(box)?.bytes;
        out.push({
          worker: box.worker,
          ...(box.channel ? { channel: box.channel } : {}),
          ...(box.exec ? { exec: true } : {}),
          run: box.id,
          container: box.handle.containerId,
          made_at: new Date(box.madeAt).toISOString(),
          ...(memory !== undefined ? { memory_bytes: memory } : {}),
        });
      }
    return out;
  }

  /**
   * Asks the engine what each ready box holds, at most every MEMORY_EVERY_MS
   * per box: the engine's stats cost it real work. True when a figure changed.
   */
  async measure(): Promise<boolean> {
    let any = false;
    for (const list of [...this.ready.values()])
      for (const box of [...list]) {
        const seen = this.memory.get(box);
        if (seen && Date.now() - seen.at < MEMORY_EVERY_MS) continue;
        const bytes = await box.box.engine.boxMemory(box.handle.containerId);
        this.memory.set(box, { at: Date.now(), bytes });
        any = true;
      }
    return any;
  }

  private changed(): void {
    this.options.changed?.();
  }

  /** Discards every ready box and waits until they are gone. */
  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.held.values()) clearTimeout(timer);
    this.held.clear();
    for (const list of this.ready.values())
      for (const box of list.splice(0)) this.discard(box, "the server stops");
    this.changed();
    while (this.discarding.size || [...this.making.values()].some((n) => n > 0)) {
      await Promise.all([...this.discarding]);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /**
   * Whether this slot's runs start the usual way, never from a ready box: a
   * worker with MCP servers has them listed as pi starts (extensions/mcp.ts),
   * and a ready box's door opens only at hand-off, so its tools would be
   * missing for the whole run. A worker whose agent is not pi has no ready
   * box either: a ready box starts pi. A `box exec` box starts no engine.
   */
  private unpooled(slot: Slot): boolean {
    if (slot.exec) return false;
    const { paths } = this.options;
    const config = loadConfig(paths.config, { vaultDir: paths.vault });
    const view = workerView(config, slot.worker);
    return (view?.mcp.length ?? 0) > 0 || (view !== undefined && view.agent !== "pi");
  }

  private fill(slot: Slot): void {
    if (this.closed) return;
    const key = slotKey(slot);
    if (this.held.has(key) || this.checking.has(key)) return;
    const have = (this.ready.get(key)?.length ?? 0) + (this.making.get(key) ?? 0);
    // a channel has one session at a time: one box is enough for it
    const size = slot.channel ? Math.min(1, this.options.size()) : this.options.size();
    for (let i = have; i < size && this.options.room(); i++) this.make(slot);
  }

  private make(slot: Slot): void {
    const key = slotKey(slot);
    const { worker } = slot;
    this.making.set(key, (this.making.get(key) ?? 0) + 1);
    void makeReadyBox({
      paths: this.options.paths,
      worker,
      ...(slot.channel ? { channel: slot.channel } : {}),
      ...(slot.exec ? { exec: true } : {}),
      note: () => undefined,
      ...(this.options.env ? { env: this.options.env } : {}),
    })
      .then(
        (box) => {
          if (this.closed) this.discard(box, "the server stops");
          else {
            const list = this.ready.get(key) ?? [];
            list.push(box);
            this.ready.set(key, list);
            this.changed();
            // it ended by itself while nobody had it: never handed out
            void box.handle.done.then(() => {
              if (this.remove(box)) this.discard(box, "its box ended");
            });
          }
        },
        (error: unknown) =>
          this.options.note(`ready box for ${worker} not made: ${errorMessage(error)}`),
      )
      .finally(() => this.making.set(key, (this.making.get(key) ?? 1) - 1));
  }

  /** Why a box may not serve a run now, or undefined. */
  private async unfit(box: ReadyBox): Promise<string | undefined> {
    if (box.ended()) return "its box ended";
    // both only read (files, the engine, git), and a run's start waits on them: asked at once
    const [key, moved] = await Promise.all([
      readyKey(this.options.paths.config, box.box.engine, box.box.image).catch(() => undefined),
      movedRepo(box.box.worker.mounts, box.home.repos.repos).catch(() => "?"),
    ]);
    if (key !== box.key) return "its config or image changed";
    return moved ? `repo ${moved} moved on since it was cloned` : undefined;
  }

  private remove(box: ReadyBox): boolean {
    const list = this.ready.get(slotKey(box));
    const at = list?.indexOf(box) ?? -1;
    if (!list || at < 0) return false;
    list.splice(at, 1);
    this.changed();
    return true;
  }

  private discard(box: ReadyBox, why: string): void {
    const done = discardReadyBox(this.options.paths, box)
      .catch((error: unknown) =>
        this.options.note(`ready box ${box.id} not discarded: ${errorMessage(error)}`),
      )
      .finally(() => this.discarding.delete(done));
    this.discarding.add(done);
    this.options.note(`ready box ${box.id} for ${box.worker} discarded: ${why}`);
  }
}
