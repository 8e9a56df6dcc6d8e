import { jsonRpcMessages } from "./answers.ts";

/**
 * What an MCP server answered a forwarded `tools/call`, for the call's audit
 * line: a JSON-RPC error (its code and message) or a tool result flagged
 * `isError`. Read on the side as the bytes pass (the box's answer is never
 * held back), from a JSON body or an event stream, and only up to
 * MAX_OBSERVED bytes: a larger answer is recorded by its status alone.
 */
const MAX_OBSERVED = 256 * 1024;
const MAX_MESSAGE = 200;

export interface McpOutcome {
  error?: { code: number | null; message: string };
  /** The tool ran and reported a failure (`result.isError`). */
  tool_error?: true;
}

export class McpOutcomeTap {
  private chunks: Buffer[] | undefined = [];
  private size = 0;

  constructor(private readonly stream: boolean) {}

  static for(contentType: string | string[] | undefined): McpOutcomeTap | undefined {
    const type = String(contentType ?? "");
    if (type.includes("text/event-stream")) return new McpOutcomeTap(true);
    if (type.includes("json")) return new McpOutcomeTap(false);
    return undefined;
  }

  push(chunk: Buffer): void {
    if (!this.chunks) return;
    this.size += chunk.length;
    if (this.size > MAX_OBSERVED) this.chunks = undefined;
    else this.chunks.push(chunk);
  }

  /** The outcome the answer reported; undefined when it reported none or was not read whole. */
  finish(): McpOutcome | undefined {
    if (!this.chunks) return undefined;
    const text = Buffer.concat(this.chunks).toString("utf8");
    this.chunks = undefined;
    for (const parsed of jsonRpcMessages(text, this.stream)) {
      const message = parsed as { error?: unknown; result?: unknown };
      if (message.error !== undefined) return { error: errorOf(message.error) };
      if (message.result !== undefined) {
        const result = message.result as { isError?: unknown } | null;
        return result?.isError === true ? { tool_error: true } : undefined;
      }
    }
    return undefined;
  }
}

function errorOf(error: unknown): { code: number | null; message: string } {
  const value = (typeof error === "object" && error !== null ? error : {}) as {
    code?: unknown;
    message?: unknown;
  };
  return {
    code: typeof value.code === "number" ? value.code : null,
    message: String(value.message ?? "").slice(0, MAX_MESSAGE),
  };
}
