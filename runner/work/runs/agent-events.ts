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
  if (agent === "codex") return new CodexEvents();
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
  has(id: string): boolean {
    return this.names.has(id);
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

/** A Codex item that is a tool at work: what pi would call it, and its arguments. */
function codexTool(item: Record<string, unknown>): { name: string; args: object } | undefined {
  if (item.type === "command_execution")
    return { name: "shell", args: { command: str(item.command) ?? "" } };
  if (item.type === "mcp_tool_call") {
    const server = str(item.server) ?? "mcp";
    const tool = str(item.tool) ?? "tool";
    // ours are pi's names; another server's as extensions/mcp.ts names them
    return {
      name: server === "roster" ? tool : `${server}__${tool}`,
      args: record(item.arguments) ?? {},
    };
  }
  if (item.type === "file_change") return { name: "apply_patch", args: { changes: item.changes } };
  return undefined;
}

/** What a finished tool item gave back, and whether it failed. */
function codexResult(item: Record<string, unknown>): { text: string; failed: boolean } {
  if (item.type === "command_execution") {
    const code = item.exit_code;
    return {
      text: str(item.aggregated_output) ?? "",
      failed: typeof code === "number" && code !== 0,
    };
  }
  if (item.type === "mcp_tool_call") {
    const error = record(item.error);
    const said = str(error?.message) ?? str(item.error);
    if (said) return { text: said, failed: true };
    const content = resultContent(record(item.result)?.content);
    return { text: content.map((part) => part.text).join("\n"), failed: item.status === "failed" };
  }
  return { text: str(item.status) ?? "", failed: item.status === "failed" };
}

/**
 * Codex's `exec --json`: `thread.started` and `turn.started` open the run,
 * `item.started`/`item.completed` carry its commands, MCP calls, file changes
 * and messages, `turn.completed` or `turn.failed` closes it.
 */
class CodexEvents implements AgentEvents {
  private readonly calls = new CallNames();

  read(line: string): PiEvent[] {
    const event = parseEvent(line);
    if (!event) return [];
    if (event.type === "thread.started") return [{ type: "agent_start", agent: "codex" }];
    if (event.type === "turn.started") return [{ type: "turn_start" }];
    if (event.type === "turn.completed") return [{ type: "agent_end" }, { type: "agent_settled" }];
    if (event.type === "turn.failed") {
      const said = str(record(event.error)?.message) ?? "the turn failed";
      return [
        {
          type: "message_end",
          message: { role: "assistant", content: [], stopReason: "error", errorMessage: said },
        },
        { type: "agent_end" },
        { type: "agent_settled" },
      ];
    }
    const item = record(event.item);
    if (!item) return [];
    if (event.type === "item.started") return this.started(item);
    if (event.type === "item.completed") return this.completed(item);
    return [];
  }

  private started(item: Record<string, unknown>): PiEvent[] {
    const id = str(item.id);
    const tool = codexTool(item);
    if (!id || !tool) return [];
    this.calls.set(id, tool.name);
    return [{ type: "tool_execution_start", toolCallId: id, toolName: tool.name, args: tool.args }];
  }

  private completed(item: Record<string, unknown>): PiEvent[] {
    const text = str(item.text);
    if (item.type === "agent_message") return text?.trim() ? [words(text)] : [];
    const id = str(item.id);
    const tool = codexTool(item);
    if (!id || !tool) return [];
    // a tool seen only when it finished (a file change) starts and ends here
    const begun = this.calls.has(id);
    const result = codexResult(item);
    return [
      ...(begun ? [] : this.started(item)),
      {
        type: "tool_execution_end",
        toolCallId: id,
        toolName: this.calls.take(id),
        result: { content: [{ type: "text", text: result.text }] },
        isError: result.failed,
      },
    ];
  }
}
