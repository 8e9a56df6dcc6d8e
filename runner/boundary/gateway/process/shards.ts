import { type ChildProcess, fork } from "node:child_process";
import type { RosterPaths } from "../../../ground/config/paths.ts";
import { closeDoor, runDoorsOf } from "../doors/door.ts";
import { liveRuns } from "../doors/identity.ts";
import { DoorError } from "../doors/run-doors.ts";
import type { ActionHandler, ActionRequest, HeldMcpCall } from "../exchange/action-host.ts";
import { GATEWAY_NODE_FLAGS } from "../settings/defaults.ts";
import type { BudgetBook } from "../spend/budget.ts";
import { answerBudgetQuestion, type BudgetQuestion } from "../spend/shared-budgets.ts";
import { deferCaCerts, ROSTER_BIN } from "./roster-child.ts";
import { SHARD_START_ENV, type ShardReady, type ShardStart } from "./shard.ts";
import { Link, LinkError } from "./shard-link.ts";

/**
 * The gateway's shards, its side (shard.ts is theirs): N child processes,
 * each serving the doors of the runs it is given, so the door's TLS and HTTP
 * work spreads over the host's cores. A run's door is opened by the shard
 * holding the fewest; every request of that run is then that shard's, so the
 * run's audit share, held bodies and the order of its audit lines stay in one
 * process as before. This process keeps what runs share: the budget counters
 * (a shard's check and charge are answered here one at a time, in arrival
 * order, and each spend is appended to the ledger here), and the action host.
 * A shard that dies is started again and reopens its runs' doors in the same
 * folders, as a gateway restarted in place does.
 */
const READY_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 5_000;
/** Shard deaths within a minute after which no more are started: a crash loop serves nobody. */
const MOST_DEATHS_A_MINUTE = 5;

interface Shard {
  child: ChildProcess;
  link: Link;
  runs: Set<string>;
  exited: Promise<void>;
}

export interface ShardsOptions {
  paths: RosterPaths;
  /** The gateway's own door folder: run doors are named after it. */
  ownerDir: string;
  count: number;
  budgets: BudgetBook;
  actions: ActionHandler;
  /** Where a shard's death and restart are said (the gateway's note). */
  note: (text: string) => void;
}

export class Shards {
  private readonly shards: Shard[] = [];
  private readonly assigned = new Map<string, Shard>();
  private stopping = false;
  private readonly deaths: number[] = [];

  private constructor(private readonly options: ShardsOptions) {}

  static async start(options: ShardsOptions): Promise<Shards> {
    const shards = new Shards(options);
    try {
      const started = await Promise.all(
        Array.from({ length: options.count }, () => shards.launch()),
      );
      shards.shards.push(...started);
    } catch (error) {
      await shards.closeAll(false);
      throw error;
    }
    return shards;
  }

  /** The shards' process ids, in order (for `box doctor` and tests). */
  get pids(): number[] {
    return this.shards.map((shard) => shard.child.pid ?? 0);
  }

  /** Which shard (by index) serves a run's door, if one does. */
  shardOf(runId: string): number | undefined {
    const shard = this.assigned.get(runId);
    return shard ? this.shards.indexOf(shard) : undefined;
  }

  async open(runId: string): Promise<string> {
    const shard = this.assigned.get(runId) ?? this.leastLoaded();
    // taken before the answer: a second ask for the same run goes to the same shard
    this.assigned.set(runId, shard);
    shard.runs.add(runId);
    try {
      return await shard.link.ask<string>("open", runId);
    } catch (error) {
      this.forget(runId, shard);
      throw asDoorError(error);
    }
  }

  async close(runId: string): Promise<void> {
    const shard = this.assigned.get(runId) ?? this.shards[0];
    if (!shard) return;
    this.forget(runId, shard);
    try {
      await shard.link.ask("close", runId);
    } catch (error) {
      throw asDoorError(error);
    }
  }

  /** Open connections at a run's door (0 when no shard holds it open). */
  async connections(runId: string): Promise<number> {
    const shard = this.assigned.get(runId);
    return shard ? await shard.link.ask<number>("connections", runId) : 0;
  }

  /** Every shard's metrics, as prom-client's JSON (the gateway's /metrics adds them up). */
  async metrics(): Promise<object[][]> {
    return Promise.all(this.shards.map((shard) => shard.link.ask<object[]>("metrics")));
  }

  /** At start: reopens the doors of live runs a gateway left, spread over the shards; removes the rest. */
  async reopen(): Promise<void> {
    const live = liveRuns(this.options.paths.identity);
    for (const [runId, dir] of await runDoorsOf(this.options.ownerDir)) {
      if (live.has(runId)) await this.open(runId).catch(() => closeDoor(dir, true));
      else await closeDoor(dir, true);
    }
  }

  /** Stops every shard; its doors' folders stay unless `removeFolders` (run-doors.ts says why). */
  async closeAll(removeFolders: boolean): Promise<void> {
    this.stopping = true;
    await Promise.all(
      this.shards.map(async (shard) => {
        await shard.link.ask("stop", removeFolders).catch(() => undefined);
        if (shard.child.connected) shard.child.disconnect();
        const timer = setTimeout(() => shard.child.kill("SIGKILL"), STOP_GRACE_MS);
        await shard.exited;
        clearTimeout(timer);
      }),
    );
    this.shards.length = 0;
    this.assigned.clear();
  }

  private leastLoaded(): Shard {
    let best: Shard | undefined;
    for (const shard of this.shards) {
      // a shard that has died and is being replaced takes no new door
      if (shard.child.exitCode !== null || shard.child.signalCode !== null) continue;
      if (!best || shard.runs.size < best.runs.size) best = shard;
    }
    if (!best) throw new DoorError(503, "the gateway has no shard to open a door in");
    return best;
  }

  private forget(runId: string, shard: Shard): void {
    shard.runs.delete(runId);
    if (this.assigned.get(runId) === shard) this.assigned.delete(runId);
  }

  private async launch(): Promise<Shard> {
    const { paths, ownerDir, count, budgets, actions } = this.options;
    const holds = actions.holdMcpCall !== undefined;
    const start: ShardStart = { paths, ownerDir, of: count, holds };
    const child = fork(ROSTER_BIN, ["gateway", "start", "--shard"], {
      env: { ...deferCaCerts(process.env), [SHARD_START_ENV]: JSON.stringify(start) },
      execArgv: GATEWAY_NODE_FLAGS,
      // a shard's stdout is nobody's; a bug's stack still shows on stderr
      stdio: ["ignore", "ignore", "inherit", "ipc"],
      serialization: "advanced",
    });
    child.on("error", () => undefined);
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    const link = new Link(child, {
      budget: (question) => answerBudgetQuestion(budgets, question as BudgetQuestion),
      spend: (told) => {
        const { subject, spend } = told as { subject: string; spend: Record<string, number> };
        budgets.record(subject, spend);
      },
      action: (request) => {
        const asked = request as ActionRequest;
        return actions.handle({ ...asked, body: Buffer.from(asked.body) });
      },
      hold: (call) => {
        if (!actions.holdMcpCall) throw new Error("this gateway's action host holds no MCP call");
        return actions.holdMcpCall(call as HeldMcpCall);
      },
    });
    const shard: Shard = { child, link, runs: new Set(), exited };
    try {
      await ready(child, exited);
    } catch (error) {
      link.close(error instanceof Error ? error : new Error(String(error)));
      child.kill("SIGKILL");
      throw new Error(
        `a gateway shard (${paths.config}) did not start: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    void exited.then(() => this.lost(shard));
    return shard;
  }

  /** A shard that died: its questions are refused, and a new one reopens its runs' doors. */
  private async lost(shard: Shard): Promise<void> {
    shard.link.close(new Error("the gateway shard serving this run has stopped"));
    if (this.stopping) return;
    const index = this.shards.indexOf(shard);
    if (index < 0) return;
    const runs = [...shard.runs];
    for (const runId of runs) this.forget(runId, shard);
    const now = Date.now();
    this.deaths.push(now);
    while ((this.deaths[0] ?? now) < now - 60_000) this.deaths.shift();
    if (this.deaths.length >= MOST_DEATHS_A_MINUTE) {
      // fail closed: its runs' doors stay shut, and new doors go to the shards still up
      this.shards.splice(index, 1);
      this.options.note(
        `gateway shard ${shard.child.pid ?? "?"} stopped (${describe(shard.child)}), the ${this.deaths.length}th shard death within a minute: no other is started in its place (${this.shards.length} left); its ${runs.length} run(s) lose their doors`,
      );
      return;
    }
    this.options.note(
      `gateway shard ${shard.child.pid ?? "?"} stopped (${describe(shard.child)}); starting another for its ${runs.length} run(s)`,
    );
    let next: Shard;
    try {
      next = await this.launch();
    } catch (error) {
      this.shards.splice(index, 1);
      this.options.note(error instanceof Error ? error.message : String(error));
      return;
    }
    if (this.stopping) {
      next.child.disconnect();
      return;
    }
    this.shards[index] = next;
    const live = liveRuns(this.options.paths.identity);
    for (const runId of runs) if (live.has(runId)) await this.open(runId).catch(() => undefined);
  }
}

function describe(child: ChildProcess): string {
  return child.signalCode ? `signal ${child.signalCode}` : `exit code ${child.exitCode ?? "?"}`;
}

/** A shard's refusal as the door route answers it: 404 for a run with no live token, and so on. */
function asDoorError(error: unknown): Error {
  if (error instanceof LinkError) return new DoorError(error.status ?? 500, error.message);
  return error instanceof Error ? error : new Error(String(error));
}

function ready(child: ChildProcess, exited: Promise<void>): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => finish(new Error(`it did not report ready within ${READY_TIMEOUT_MS / 1000} s`)),
      READY_TIMEOUT_MS,
    );
    const onMessage = (message: unknown) => {
      const said = message as Partial<ShardReady>;
      if (said.type === "ready") finish();
      else if (said.type === "failed") finish(new Error(String(said.error)));
    };
    const finish = (error?: Error) => {
      clearTimeout(timer);
      child.off("message", onMessage);
      if (error) reject(error);
      else resolve();
    };
    child.on("message", onMessage);
    void exited.then(() => finish(new Error("it exited before it was ready")));
  });
}
