import type { Span } from "@opentelemetry/api";
import {
  attribute,
  type Tracing,
  traceparentOf,
  tracingFor,
} from "../../ground/telemetry/tracing.ts";
import type { RunRecord } from "../../records/run-records/run-record.ts";
import { parseEvent } from "./pi-events.ts";

/**
 * A run as a trace (docs/telemetry.md): its own span from start to settle,
 * and under it a span per model call (a turn's start to its assistant
 * message's end) and per tool call (pi's tool_execution_start to its end),
 * read from pi's events as the run owner reads them. A warm session's run has
 * a span per turn (a prompt, agent_start to agent_settled) between the two. The gateway adds the
 * door's decisions under the same span, knowing only the run id (tracing.ts).
 * What a span says is its kind and bounded names: never a prompt, an
 * argument, a result or a credential.
 */
const FLUSH_WAIT_MS = 2_000;
/** Open tool spans a run may hold at once: a box can't grow the host's memory with them. */
const MAX_OPEN_TOOLS = 64;

export class RunTrace {
  private model: Span | undefined;
  private readonly tools = new Map<string, Span>();
  private turns = 0;
  /** A session's turn under way (sessions only). */
  private turn: Span | undefined;
  private prompts = 0;

  private constructor(
    private readonly tracing: Tracing,
    private readonly run: Span,
    private readonly runId: string,
    private readonly session: boolean,
  ) {}

  /** The run's trace when `[telemetry] otlp_endpoint` is set; undefined otherwise. */
  static async start(
    endpoint: string | undefined,
    record: RunRecord,
  ): Promise<RunTrace | undefined> {
    const made = tracingFor(endpoint, "roster");
    if (!made) return undefined;
    const tracing = await made;
    const span = tracing.runSpan(
      record.id,
      `run ${record.worker}`,
      {
        "roster.run.id": attribute(record.id),
        "roster.worker": attribute(record.worker),
        "roster.run.kind": attribute(record.kind),
      },
      Date.parse(record.started_at) || undefined,
    );
    return new RunTrace(tracing, span, record.id, record.kind === "session");
  }

  /** What the box's engine is told to put its own spans under. */
  get traceparent(): string {
    return traceparentOf(this.runId);
  }

  /** One line of pi's event stream. */
  line(line: string): void {
    const event = parseEvent(line);
    if (!event) return;
    if (this.session && event.type === "agent_start" && !this.turn) {
      this.prompts++;
      this.turn = this.tracing.childOf(this.runId, "session turn", {
        "roster.prompt": this.prompts,
      });
    } else if (this.session && event.type === "agent_settled") {
      this.endOpen();
      this.turn?.end();
      this.turn = undefined;
    } else if (event.type === "turn_start") {
      this.model?.end();
      this.turns++;
      this.model = this.child("model call", { "roster.turn": this.turns });
    } else if (event.type === "message_end") {
      const message = event.message as { role?: string; stopReason?: string } | undefined;
      if (message?.role !== "assistant" || !this.model) return;
      if (message.stopReason)
        this.model.setAttribute("roster.stop_reason", attribute(message.stopReason));
      if (message.stopReason === "error") this.model.setStatus({ code: 2 });
      this.model.end();
      this.model = undefined;
    } else if (event.type === "tool_execution_start") {
      const id = typeof event.toolCallId === "string" ? event.toolCallId.slice(0, 128) : "";
      if (!id || this.tools.has(id) || this.tools.size >= MAX_OPEN_TOOLS) return;
      const name = typeof event.toolName === "string" ? event.toolName : "tool";
      this.tools.set(
        id,
        this.tracing.childOf(this.runId, `tool ${name.slice(0, 64)}`, {
          "roster.tool": attribute(name),
        }),
      );
    } else if (event.type === "tool_execution_end") {
      const id = typeof event.toolCallId === "string" ? event.toolCallId.slice(0, 128) : "";
      const span = this.tools.get(id);
      if (!span) return;
      if (event.isError === true) span.setStatus({ code: 2 });
      span.end();
      this.tools.delete(id);
    }
  }

  /** Under the session's turn when one is under way, else under the run. */
  private child(name: string, attributes: Record<string, string | number | boolean>): Span {
    return this.turn
      ? this.tracing.under(this.runId, this.turn, name, attributes)
      : this.tracing.childOf(this.runId, name, attributes);
  }

  private endOpen(): void {
    this.model?.end();
    this.model = undefined;
    for (const span of this.tools.values()) span.end();
    this.tools.clear();
  }

  /** The run's end: what is open ends with it, and the spans go out (2 s at most). */
  async end(record: RunRecord): Promise<void> {
    this.endOpen();
    this.turn?.end();
    this.turn = undefined;
    this.run.setAttribute("roster.ended_by", attribute(record.ended_by ?? "unknown"));
    if (record.error) this.run.setStatus({ code: 2, message: record.error.slice(0, 256) });
    this.run.end(Date.parse(record.ended_at ?? "") || undefined);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.tracing.flush().catch(() => undefined),
      new Promise((resolve) => {
        timer = setTimeout(resolve, FLUSH_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
  }
}
