import { attribute, type Tracing } from "./tracing.ts";

/**
 * The action host's decisions as spans under the run that proposed them
 * (docs/telemetry.md): one per journal line with a run — proposed, refused,
 * filed for the desk, approved, denied, executed, failed — saying its kind,
 * its intent (an action's configured name) and its gate. A summary or a
 * detail (what was said, to whom) is never an attribute.
 */
export interface JournalFacts {
  run_id: string | null;
  kind: string;
  intent?: string | undefined;
  gate_id?: string | undefined;
  worker: string;
}

export function actionSpans(tracing: Tracing): (event: JournalFacts) => void {
  return (event) => {
    if (!event.run_id) return;
    const span = tracing.childOf(event.run_id, `action ${event.kind}`, {
      "roster.action": attribute(event.kind),
      "roster.worker": attribute(event.worker),
      ...(event.intent ? { "roster.intent": attribute(event.intent) } : {}),
      ...(event.gate_id ? { "roster.gate": attribute(event.gate_id) } : {}),
    });
    span.end();
  };
}
