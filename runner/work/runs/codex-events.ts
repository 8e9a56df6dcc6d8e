import { type PiEvent, parseEvent } from "./pi-events.ts";
import {
  type AgentEvents,
  CallNames,
  failedTurn,
  parseObject,
  record,
  resultContent,
  settled,
  str,
  words,
} from "./stream-parts.ts";

/**
 * Codex's two streams read as pi's events (agent-events.ts says why): `codex
 * exec --json` for a run or a task, `codex app-server` for a warm session.
 * Both carry the same items (commands, MCP calls, file changes, messages),
 * spelt in snake case by exec and camel case by the app-server.
 */

interface ItemNames {
  user: string;
  command: string;
  mcp: string;
  patch: string;
  message: string;
  output: string;
  exitCode: string;
}

const EXEC_ITEMS: ItemNames = {
  user: "user_message",
  command: "command_execution",
  mcp: "mcp_tool_call",
  patch: "file_change",
  message: "agent_message",
  output: "aggregated_output",
  exitCode: "exit_code",
};

const APP_SERVER_ITEMS: ItemNames = {
  user: "userMessage",
  command: "commandExecution",
  mcp: "mcpToolCall",
  patch: "fileChange",
  message: "agentMessage",
  output: "aggregatedOutput",
  exitCode: "exitCode",
};

/** A stream's items as pi's tool and message events, remembering which tool each call id named. */
class CodexItems {
  private readonly calls = new CallNames();
  constructor(private readonly names: ItemNames) {}

  started(item: Record<string, unknown>): PiEvent[] {
    // an assistant's message opens: a live view's line of it starts here
    if (item.type === this.names.message)
      return [{ type: "message_start", message: { role: "assistant" } }];
    const id = str(item.id);
    const tool = this.tool(item);
    if (!id || !tool) return [];
    this.calls.set(id, tool.name);
    return [{ type: "tool_execution_start", toolCallId: id, toolName: tool.name, args: tool.args }];
  }

  completed(item: Record<string, unknown>): PiEvent[] {
    const text = str(item.text);
    if (item.type === this.names.message) return text?.trim() ? [words(text)] : [];
    // the turn's message as Codex took it: runs show tells who said what
    if (item.type === this.names.user) {
      const content = resultContent(item.content);
      return content.length ? [{ type: "message_end", message: { role: "user", content } }] : [];
    }
    const id = str(item.id);
    if (!id || !this.tool(item)) return [];
    // a tool seen only when it finished (a file change) starts and ends here
    const begun = this.calls.has(id);
    const result = this.result(item);
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

  /** An item that is a tool at work: what pi would call it, and its arguments. */
  private tool(item: Record<string, unknown>): { name: string; args: object } | undefined {
    if (item.type === this.names.command)
      return { name: "shell", args: { command: str(item.command) ?? "" } };
    if (item.type === this.names.mcp) {
      const server = str(item.server) ?? "mcp";
      const tool = str(item.tool) ?? "tool";
      // ours are pi's names; another server's as extensions/mcp.ts names them
      return {
        name: server === "roster" ? tool : `${server}__${tool}`,
        args: record(item.arguments) ?? {},
      };
    }
    if (item.type === this.names.patch)
      return { name: "apply_patch", args: { changes: item.changes } };
    return undefined;
  }

  /** What a finished tool item gave back, and whether it failed. */
  private result(item: Record<string, unknown>): { text: string; failed: boolean } {
    const failed = item.status === "failed" || item.status === "declined";
    if (item.type === this.names.command) {
      const code = item[this.names.exitCode];
      return {
        text: str(item[this.names.output]) ?? "",
        failed: failed || (typeof code === "number" && code !== 0),
      };
    }
    if (item.type === this.names.mcp) {
      const error = record(item.error);
      const said = str(error?.message) ?? str(item.error);
      if (said) return { text: said, failed: true };
      const content = resultContent(record(item.result)?.content);
      return { text: content.map((part) => part.text).join("\n"), failed };
    }
    return { text: str(item.status) ?? "", failed };
  }
}

/**
 * `codex exec --json`: `thread.started` and `turn.started` open the run,
 * `item.started`/`item.completed` carry its items, `turn.completed` or
 * `turn.failed` closes it.
 */
export class CodexExecEvents implements AgentEvents {
  private readonly items = new CodexItems(EXEC_ITEMS);

  read(line: string): PiEvent[] {
    const event = parseEvent(line);
    if (!event) return [];
    if (event.type === "thread.started") return [{ type: "agent_start", agent: "codex" }];
    if (event.type === "turn.started") return [{ type: "turn_start" }];
    if (event.type === "turn.completed") return settled();
    if (event.type === "turn.failed")
      return failedTurn(str(record(event.error)?.message) ?? "the turn failed");
    const item = record(event.item);
    if (!item) return [];
    if (event.type === "item.started") return this.items.started(item);
    if (event.type === "item.completed") return this.items.completed(item);
    return [];
  }
}

/** A JSON-RPC id: the app-server's answers and requests carry one back. */
const rpcId = (value: unknown): string | number | undefined =>
  typeof value === "string" || typeof value === "number" ? value : undefined;

/**
 * `codex app-server`: JSON-RPC without its "jsonrpc" field, one message a
 * line. Its notifications are the session's events: `thread/started`,
 * `turn/started`, `item/started`/`item/completed`, the message's deltas, and
 * `turn/completed` (whose status says whether the turn failed, and why: an
 * `error` notification before it is a retry, Codex's own affair, or says the
 * same). Its answers to the host's requests read as pi's RPC `response`
 * events, and a request of its own as an `agent_request` event, so the
 * session's writer (sessions/codex-app-server.ts) sees the thread it started
 * and what to answer.
 */
export class CodexAppServerEvents implements AgentEvents {
  private readonly items = new CodexItems(APP_SERVER_ITEMS);

  read(line: string): PiEvent[] {
    const message = parseObject(line);
    if (!message) return [];
    const id = rpcId(message.id);
    const method = str(message.method);
    if (method === undefined) return id === undefined ? [] : [answer(id, message)];
    if (id !== undefined) return [{ type: "agent_request", id, method }];
    const params = record(message.params);
    if (method === "thread/started") return [{ type: "agent_start", agent: "codex" }];
    if (method === "turn/started") return [{ type: "turn_start" }];
    if (method === "turn/completed") return turnEnd(record(params?.turn));
    if (method === "item/agentMessage/delta") {
      const delta = str(params?.delta);
      return delta
        ? [{ type: "message_update", assistantMessageEvent: { type: "text_delta", delta } }]
        : [];
    }
    const item = record(params?.item);
    if (!item) return [];
    if (method === "item/started") return this.items.started(item);
    if (method === "item/completed") return this.items.completed(item);
    return [];
  }
}

/** An answer to one of the host's requests, as pi's RPC response to a command. */
function answer(id: string | number, message: Record<string, unknown>): PiEvent {
  const error = record(message.error);
  if (!error) return { type: "response", id, success: true, data: message.result };
  return { type: "response", id, success: false, error: str(error.message) ?? "refused" };
}

/** `turn/completed`: a settled turn, or a failed or interrupted one with its error. */
function turnEnd(turn: Record<string, unknown> | undefined): PiEvent[] {
  if (turn?.status === "completed") return settled();
  const said = str(record(turn?.error)?.message);
  return failedTurn(
    said ?? (turn?.status === "interrupted" ? "the turn was interrupted" : "the turn failed"),
  );
}
