import { Counter, Histogram, Registry } from "prom-client";
import { workerOfSubject } from "../../../ground/config/subject.ts";
import { BoundedLabel } from "../../../ground/telemetry/bounded-label.ts";
import { collectProcessMetrics } from "../../../ground/telemetry/process-metrics.ts";
import { SENTINEL_LEAK_RULE } from "../judging/sentinel.ts";
import type { DecisionRecord } from "./audit.ts";

/**
 * The door in numbers, for a monitoring stack: every audit line the gateway
 * writes is also counted here — by worker, verdict and rule; its exchange's
 * duration; the bytes relayed; the spend by meter; the sentinel tripwire's
 * refusals by worker (a series of their own, which no flood of rule names
 * folds into "other") — and the gateway's own process (memory, event-loop
 * lag). Served on the gateway's loopback port at
 * /metrics (host-routes.ts), where the server's /metrics reads it. No host,
 * path, header or body is ever a label: a box chooses those.
 */
export class DoorMetrics {
  readonly registry = new Registry();
  private readonly workers = new BoundedLabel();
  private readonly rules = new BoundedLabel();
  private readonly meters = new BoundedLabel(50);
  private readonly decisions = new Counter({
    name: "roster_door_decisions_total",
    help: "Requests the door judged, by worker, verdict and the rule that decided",
    labelNames: ["worker", "verdict", "rule"],
    registers: [this.registry],
  });
  private readonly seconds = new Histogram({
    name: "roster_door_exchange_seconds",
    help: "From a request's arrival at the door to its audit line: the decision, and for a forwarded one the whole exchange",
    labelNames: ["verdict"],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  private readonly bytes = new Counter({
    name: "roster_door_bytes_total",
    help: "Response body bytes the door relayed to boxes, by worker",
    labelNames: ["worker"],
    registers: [this.registry],
  });
  private readonly leaks = new Counter({
    name: "roster_door_sentinel_leaks_total",
    help: "Requests refused for carrying a box's credential sentinel to a host no credential is injected for (rule sentinel-leak), by worker",
    labelNames: ["worker"],
    registers: [this.registry],
  });
  private readonly spend = new Counter({
    name: "roster_spend_total",
    help: "Spend recorded at the door, by worker and meter (tokens, usd, or a grant's own)",
    labelNames: ["worker", "meter"],
    registers: [this.registry],
  });

  constructor() {
    collectProcessMetrics(this.registry, "roster_gateway_");
  }

  /** One audit line, `seconds` after its request arrived. */
  record(line: DecisionRecord, seconds: number): void {
    const worker = this.workers.of(line.subject ? workerOfSubject(line.subject) : "none");
    this.decisions.inc({ worker, verdict: line.verdict, rule: this.rules.of(line.rule) });
    this.seconds.observe({ verdict: line.verdict }, seconds);
    if (line.bytes) this.bytes.inc({ worker }, line.bytes);
    if (line.rule === SENTINEL_LEAK_RULE) this.leaks.inc({ worker });
    for (const [meter, amount] of Object.entries(line.spend ?? {}))
      if (Number.isFinite(amount) && amount > 0)
        this.spend.inc({ worker, meter: this.meters.of(meter) }, amount);
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  /** Every series as prom-client's JSON, for a gateway adding its shards' up (shard-metrics.ts). */
  series(): Promise<object[]> {
    return this.registry.getMetricsAsJSON();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
