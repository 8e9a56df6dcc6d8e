import { attribute, type Tracing } from "../../../ground/telemetry/tracing.ts";
import type { DecisionRecord } from "./audit.ts";

/**
 * The door's decisions as spans under their run's span (docs/telemetry.md):
 * one per audit line that belongs to a run, from the request's arrival to its
 * line, saying the verdict, the rule, the host, the method and the status —
 * never a path or query (where a key may ride), a header value or a body.
 */
export function doorSpans(tracing: Tracing): (record: DecisionRecord, seconds: number) => void {
  return (record, seconds) => {
    if (!record.run_id) return;
    const end = Date.now();
    const span = tracing.childOf(
      record.run_id,
      `door ${record.verdict}`,
      {
        "roster.verdict": attribute(record.verdict),
        "roster.rule": attribute(record.rule ?? "none"),
        "server.address": attribute(record.request.host),
        "server.port": record.request.port,
        "http.request.method": attribute(record.request.method),
        "http.response.status_code": record.status,
      },
      end - seconds * 1000,
    );
    span.end(end);
  };
}
