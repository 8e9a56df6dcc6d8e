import { join } from "node:path";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { BoundedLabel } from "../../ground/telemetry/bounded-label.ts";
import { collectProcessMetrics } from "../../ground/telemetry/process-metrics.ts";
import { RunIndex } from "../console/run-index.ts";
import { registerCredentialExpiry } from "./credential-expiry.ts";
import { WaitingCounts } from "./waiting-counts.ts";

/**
 * The server in numbers: boxes running (by what runs in them) and ready,
 * warm sessions, tasks waiting per worker, approvals waiting, runs started and
 * ended (by worker and how they ended) with their durations, and the server's
 * own process (memory, event-loop lag). Read when a scraper asks, from what
 * the server holds and from the records, incrementally (the run index reads
 * only runs it has not seen finish; waiting-counts.ts reads only gates not
 * yet decided and task lists that changed), so nothing here sits in a run's
 * path and a scrape's cost does not grow with the deployment's history.
 */
export interface ServerSources {
  paths: RosterPaths;
  /** Boxes running now, by what they run. */
  boxes(): { task: number; session: number; run: number };
  ready(): number;
  sessions(): number;
}

const DURATION_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200];

export class ServerMetrics {
  readonly registry = new Registry();
  private readonly runs: RunIndex;
  private readonly workers = new BoundedLabel();
  private readonly endings = new BoundedLabel(32);
  /** Finished runs already observed in the duration histogram. */
  private readonly timed = new Set<string>();

  constructor(sources: ServerSources) {
    const { paths } = sources;
    this.runs = new RunIndex(paths.state, join(paths.state, "telemetry", "run-index.json"));
    collectProcessMetrics(this.registry, "roster_server_");
    const registers = [this.registry];
    new Gauge({
      name: "roster_boxes_running",
      help: "Boxes running now, by what runs in them (a task, a warm session, a handed-over run)",
      labelNames: ["kind"],
      registers,
      collect() {
        const boxes = sources.boxes();
        for (const [kind, count] of Object.entries(boxes)) this.set({ kind }, count);
      },
    });
    new Gauge({
      name: "roster_boxes_ready",
      help: "Ready boxes started ahead of their run",
      registers,
      collect() {
        this.set(sources.ready());
      },
    });
    new Gauge({
      name: "roster_sessions",
      help: "Warm chat sessions held by the server",
      registers,
      collect() {
        this.set(sources.sessions());
      },
    });
    const workers = this.workers;
    const waiting = new WaitingCounts(paths);
    new Gauge({
      name: "roster_tasks_waiting",
      help: "Tasks on a worker's list not yet run (pending or claimed)",
      labelNames: ["worker"],
      registers,
      async collect() {
        const counts = await waiting.tasks();
        this.reset();
        for (const [worker, count] of counts) this.inc({ worker: workers.of(worker) }, count);
      },
    });
    new Gauge({
      name: "roster_approvals_waiting",
      help: "Proposals waiting for a human's decision at the desk",
      registers,
      async collect() {
        this.set(await waiting.approvals());
      },
    });
    this.runMetrics(registers);
    registerCredentialExpiry(this.registry, paths);
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** Runs from the run records: started, ended by how, and how long the ended ones took. */
  private runMetrics(registers: Registry[]): void {
    const self = this;
    // registered after `started`, whose collect fills all three from one refresh of the index
    let ended: Counter | undefined;
    let duration: Histogram | undefined;
    new Counter({
      name: "roster_runs_started_total",
      help: "Runs started, by worker",
      labelNames: ["worker"],
      registers,
      collect() {
        self.runs.refresh();
        this.reset();
        ended?.reset();
        for (const fact of self.runs.all()) {
          const worker = self.workers.of(fact.worker);
          this.inc({ worker });
          if (!fact.ended_at) continue;
          ended?.inc({ worker, ended_by: self.endings.of(fact.ended_by ?? "unknown") });
          const key = `${fact.worker}/${fact.id}`;
          if (self.timed.has(key)) continue;
          self.timed.add(key);
          const seconds = (Date.parse(fact.ended_at) - Date.parse(fact.started_at)) / 1000;
          if (Number.isFinite(seconds) && seconds >= 0) duration?.observe({ worker }, seconds);
        }
      },
    });
    ended = new Counter({
      name: "roster_runs_ended_total",
      help: "Runs ended, by worker and what ended them (done, error, ceiling, stalled, output, …)",
      labelNames: ["worker", "ended_by"],
      registers,
    });
    duration = new Histogram({
      name: "roster_run_duration_seconds",
      help: "How long ended runs took, by worker",
      labelNames: ["worker"],
      buckets: DURATION_BUCKETS,
      registers,
    });
  }
}
