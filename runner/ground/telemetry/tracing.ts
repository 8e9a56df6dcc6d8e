import { createHash } from "node:crypto";
import type { Attributes, Context, Span, Tracer } from "@opentelemetry/api";
import { spanShare } from "./span-budget.ts";

/**
 * Traces for an operator's collector, over OTLP/HTTP, only when `[telemetry]
 * otlp_endpoint` is set (nothing is exported, nor the SDK loaded, otherwise).
 *
 * A run's trace and its own span take ids derived from the run id (a SHA-256
 * of it), so every process that meets the run — the run owner, the gateway
 * judging its requests, the box (TRACEPARENT) — puts its spans under the same
 * parent knowing only the run id: nothing has to carry the ids between them.
 * Attribute values are cut to ATTRIBUTE_MAX characters; no credential, header
 * value or body is ever one.
 */
export const ATTRIBUTE_MAX = 256;

export interface RunIds {
  traceId: string;
  spanId: string;
}

/** The trace and the run span of `runId`. */
export function runIds(runId: string): RunIds {
  const digest = createHash("sha256").update(`roster-run\0${runId}`).digest("hex");
  return { traceId: digest.slice(0, 32), spanId: digest.slice(32, 48) };
}

/** The W3C traceparent naming the run's span, for whatever runs inside its box. */
export function traceparentOf(runId: string): string {
  const ids = runIds(runId);
  return `00-${ids.traceId}-${ids.spanId}-01`;
}

export interface Tracing {
  /** The run's own span, with its derived ids. */
  runSpan(runId: string, name: string, attributes: Attributes, startTime?: number): Span;
  /**
   * A span under the run's span (whoever started that one), within the run's
   * share (span-budget.ts): past it, a span that records nothing.
   */
  childOf(runId: string, name: string, attributes: Attributes, startTime?: number): Span;
  /** A span of the run under another span of this process, within the run's share too. */
  under(runId: string, parent: Span, name: string, attributes: Attributes): Span;
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

const made = new Map<string, Promise<Tracing>>();

/** The tracing of this process for `endpoint` (one per endpoint and service), or undefined without one. */
export function tracingFor(
  endpoint: string | undefined,
  service: string,
): Promise<Tracing> | undefined {
  if (!endpoint) return undefined;
  const key = `${endpoint}\0${service}`;
  let tracing = made.get(key);
  if (!tracing) {
    tracing = makeTracing(endpoint, service);
    made.set(key, tracing);
  }
  return tracing;
}

/** What an attribute may hold: text cut to its bound, numbers and booleans as they are. */
export function attribute(value: string | number | boolean): string | number | boolean {
  return typeof value === "string" ? value.slice(0, ATTRIBUTE_MAX) : value;
}

async function makeTracing(endpoint: string, service: string): Promise<Tracing> {
  const api = await import("@opentelemetry/api");
  const { BasicTracerProvider, BatchSpanProcessor, RandomIdGenerator } = await import(
    "@opentelemetry/sdk-trace-base"
  );
  const { OTLPTraceExporter } = await import("@opentelemetry/exporter-trace-otlp-http");
  const { resourceFromAttributes } = await import("@opentelemetry/resources");
  // the run span's ids are given, not drawn: set just before its startSpan, which reads them at once
  const random = new RandomIdGenerator();
  let given: RunIds | undefined;
  const idGenerator = {
    generateTraceId: () => given?.traceId ?? random.generateTraceId(),
    generateSpanId: () => given?.spanId ?? random.generateSpanId(),
  };
  const exporter = new OTLPTraceExporter({ url: `${endpoint.replace(/\/+$/, "")}/v1/traces` });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": service }),
    idGenerator,
    spanLimits: { attributeValueLengthLimit: ATTRIBUTE_MAX, attributeCountLimit: 32 },
    spanProcessors: [
      new BatchSpanProcessor(exporter, {
        scheduledDelayMillis: 500,
        maxQueueSize: 8192,
        maxExportBatchSize: 512,
      }),
    ],
  });
  const tracer: Tracer = provider.getTracer("roster");
  const budget = spanShare();
  /** The run's span may start with these attributes, or, past its share, none at all. */
  const admitted = (runId: string, attributes: Attributes): Attributes | undefined => {
    const { allowed, dropped } = budget.take(runId);
    if (!allowed) return undefined;
    return dropped ? { ...attributes, "roster.spans_dropped": dropped } : attributes;
  };
  const nothing = () => api.trace.wrapSpanContext(api.INVALID_SPAN_CONTEXT);
  const under = (ids: RunIds): Context =>
    api.trace.setSpanContext(api.ROOT_CONTEXT, {
      traceId: ids.traceId,
      spanId: ids.spanId,
      traceFlags: api.TraceFlags.SAMPLED,
      isRemote: true,
    });
  return {
    runSpan(runId, name, attributes, startTime) {
      given = runIds(runId);
      try {
        // a root: the trace id and the span id are the run's own
        return tracer.startSpan(
          name,
          { attributes, root: true, ...(startTime ? { startTime } : {}) },
          api.ROOT_CONTEXT,
        );
      } finally {
        given = undefined;
      }
    },
    childOf(runId, name, attributes, startTime) {
      const given = admitted(runId, attributes);
      if (!given) return nothing();
      return tracer.startSpan(
        name,
        { attributes: given, ...(startTime ? { startTime } : {}) },
        under(runIds(runId)),
      );
    },
    under(runId, parent, name, attributes) {
      const given = admitted(runId, attributes);
      if (!given) return nothing();
      return tracer.startSpan(
        name,
        { attributes: given },
        api.trace.setSpan(api.ROOT_CONTEXT, parent),
      );
    },
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}

export type { Span };
