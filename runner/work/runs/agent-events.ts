import type { AgentKind } from "../../ground/config/agent-schema.ts";
import { type PiEvent, parseEvent } from "./pi-events.ts";

/**
 * Another agent's event stream read as pi's (docs/agents.md): Claude Code's
 * stream JSON and Codex's JSON events become the few pi events everything
 * after the box reads — a tool's start and end, an assistant's words or its
 * model error, a turn's start and its settling — so the live view, the
 * answer, `runs show`, the console and the trace are the same for every
 * agent. events.jsonl keeps the agent's own lines; this reads them.
 *
 * Each line is hostile input like any the box writes: it is parsed once,
 * what is not understood is dropped, and the one thing kept between lines
 * (which tool a call id named) is bounded.
 */
export interface AgentEvents {
  /** The pi events one line of the agent's stream stands for (often none). */
  read(line: string): PiEvent[];
}

/** pi's own stream needs no reading; an agent's needs its reader. */
export function agentEvents(agent: AgentKind | undefined): AgentEvents {
  if (agent === "claude") return new ClaudeEvents();
  return { read: (line) => pi(line) };
}

const pi = (line: string): PiEvent[] => {
  const event = parseEvent(line);
  return event ? [event] : [];
};

/** How many call ids are remembered for their tool's name: far more than a turn's calls. */
const MAX_CALLS = 1024;

/** The tool names a stream's calls were for, the oldest forgotten first. */
class CallNames {
  private readonly names = new Map<string, string>();
  set(id: string, name: string): void {
    if (this.names.size >= MAX_CALLS) {
      const oldest = this.names.keys().next();
      if (!oldest.done) this.names.delete(oldest.value);
    }
    this.names.set(id, name);
  }
  take(id: string): string {
    const name = this.names.get(id) ?? "tool";
    this.names.delete(id);
    return name;
  }
}

const record = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);

/** Our tools reach Claude Code as `mcp__roster__<tool>`: shown as the name pi would show. */
export const toolName = (name: string): string => name.replace(/^mcp__roster__/, "");

const words = (text: string): PiEvent => ({
  type: "message_end",
  message: { role: "assistant", content: [{ type: "text", text }] },
});

/** A tool result's content (a string, or text and image blocks) as pi's text parts. */
function resultContent(content: unknown): { type: "text"; text: string }[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return list(content).flatMap((part) => {
    const text = str(record(part)?.text);
    return text === undefined ? [] : [{ type: "text" as const, text }];
  });
}

/**
 * Claude Code's `--output-format stream-json`: `system`/`init` opens a turn,
 * `assistant` carries text and tool_use blocks, `user` carries their
 * tool_result blocks, `result` closes the turn (and says whether it failed).
 */
class ClaudeEvents implements AgentEvents {
  private readonly calls = new CallNames();

  read(line: string): PiEvent[] {
    const event = parseEvent(line);
    if (!event) return [];
    if (event.type === "system" && event.subtype === "init")
      return [{ type: "agent_start", agent: "claude" }, { type: "turn_start" }];
    if (event.type === "assistant") return this.assistant(record(event.message));
    if (event.type === "user") return this.results(record(event.message));
    if (event.type === "result") return this.result(event);
    return [];
  }

  private assistant(message: Record<string, unknown> | undefined): PiEvent[] {
    const out: PiEvent[] = [];
    for (const part of list(message?.content)) {
      const block = record(part);
      const text = str(block?.text);
      if (block?.type === "text" && text?.trim()) out.push(words(text));
      const id = str(block?.id);
      const name = str(block?.name);
      if (block?.type === "tool_use" && id && name) {
        this.calls.set(id, toolName(name));
        out.push({
          type: "tool_execution_start",
          toolCallId: id,
          toolName: toolName(name),
          args: record(block.input) ?? {},
        });
      }
    }
    return out;
  }

  private results(message: Record<string, unknown> | undefined): PiEvent[] {
    const out: PiEvent[] = [];
    for (const part of list(message?.content)) {
      const block = record(part);
      const id = str(block?.tool_use_id);
      if (block?.type !== "tool_result" || !id) continue;
      out.push({
        type: "tool_execution_end",
        toolCallId: id,
        toolName: this.calls.take(id),
        result: { content: resultContent(block.content) },
        isError: block.is_error === true,
      });
    }
    return out;
  }

  /** The turn's end: its model error when it failed, then the settling a session waits for. */
  private result(event: PiEvent): PiEvent[] {
    const settled: PiEvent[] = [{ type: "agent_end" }, { type: "agent_settled" }];
    if (event.is_error !== true) return settled;
    const errors = list(event.errors).map(String);
    const said = str(event.result) ?? (errors.length ? errors.join("; ") : undefined);
    const status = typeof event.api_error_status === "number" ? ` (${event.api_error_status})` : "";
    return [
      {
        type: "message_end",
        message: {
          role: "assistant",
          content: [],
          stopReason: "error",
          errorMessage: `${said ?? str(event.subtype) ?? "the agent failed"}${status}`,
        },
      },
      ...settled,
    ];
  }
}
