import { collectDefaultMetrics, type Registry } from "prom-client";

/**
 * How often the event-loop delay is sampled, ms. prom-client's 10 ms wakes an
 * idle process 100 times a second (bench/telemetry-overhead.ts measured a
 * gateway at 0.7 wakeups/s without metrics, 99 with); at 50 a stall long
 * enough to matter to the door or the server still shows in the lag.
 */
const LAG_SAMPLE_MS = 50;

/** A process's own memory, CPU, handles and event-loop lag, under `prefix`. */
export function collectProcessMetrics(registry: Registry, prefix: string): void {
  collectDefaultMetrics({
    register: registry,
    prefix,
    eventLoopMonitoringPrecision: LAG_SAMPLE_MS,
  });
}
