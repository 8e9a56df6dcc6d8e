import type { RunRecord } from "../../records/run-records/run-record.ts";
import { CodexAppServerEvents, CodexExecEvents } from "./codex-events.ts";
import { type PiEvent, parseEvent } from "./pi-events.ts";
import {
  type AgentEvents,
  CallNames,
  failedTurn,
  list,
  record,
  resultContent,
  settled,
  str,
  words,
} from "./stream-parts.ts";

/**
 * Another agent's event stream read as pi's (docs/agents.md): Claude Code's
 * stream JSON and Codex's JSON events or app-server messages become the few
 * pi events everything after the box reads — a tool's start and end, an
 * assistant's words or its model error, a turn's start and its settling — so
 * the live view, the answer, `runs show`, the console and the trace are the
 * same for every agent. events.jsonl keeps the agent's own lines; this reads
 * them.
 *
 * Each line is hostile input like any the box writes: it is parsed once,
 * what is not understood is dropped, and the one thing kept between lines
 * (which tool a call id named) is bounded (stream-parts.ts).
 */

/**
 * The reader for a run's stream, by its agent and its kind: pi's needs none;
 * a session's is the agent's streaming mode, which for Codex is its
 * app-server (Claude Code's stream JSON is the same either way).
 */
export function agentEvents(run: Pick<RunRecord, "agent" | "kind"> | undefined): AgentEvents {
  if (run?.agent === "claude") return new ClaudeEvents();
  if (run?.agent === "codex")
    return run.kind === "session" ? new CodexAppServerEvents() : new CodexExecEvents();
  return { read: (line) => pi(line) };
}

const pi = (line: string): PiEvent[] => {
  const event = parseEvent(line);
  return event ? [event] : [];
};

/** Our tools reach Claude Code as `mcp__roster__<tool>`: shown as the name pi would show. */
export const toolName = (name: string): string => name.replace(/^mcp__roster__/, "");

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
    if (event.is_error !== true) return settled();
    const errors = list(event.errors).map(String);
    const said = str(event.result) ?? (errors.length ? errors.join("; ") : undefined);
    const status = typeof event.api_error_status === "number" ? ` (${event.api_error_status})` : "";
    return failedTurn(`${said ?? str(event.subtype) ?? "the agent failed"}${status}`);
  }
}
