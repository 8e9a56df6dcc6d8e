/**
 * Reading pi's `--mode json` event stream: parse each line (the run owner
 * splits the stream within its bounds, box-output.ts), and turn the events a
 * person cares about into short lines.
 */
export interface PiEvent {
  type: string;
  [key: string]: unknown;
}

export function parseEvent(line: string): PiEvent | undefined {
  if (!line.startsWith("{")) return undefined;
  try {
    const value = JSON.parse(line) as { type?: unknown };
    return typeof value.type === "string" ? (value as PiEvent) : undefined;
  } catch {
    return undefined;
  }
}

function short(text: string, max = 160): string {
  const one = text.replace(/\s+/g, " ").trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

interface ContentPart {
  type?: string;
  text?: string;
}

export function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return (content as ContentPart[])
    .filter((part) => part?.type === "text" && typeof part.text === "string")
    .map((part) => part.text)
    .join("");
}

/** The text of an assistant message_end, if this is one. */
export function assistantText(event: PiEvent): string | undefined {
  if (event.type !== "message_end") return undefined;
  const message = event.message as { role?: string; content?: unknown } | undefined;
  if (message?.role !== "assistant") return undefined;
  const text = textOf(message.content);
  return text.trim() ? text : undefined;
}

/**
 * An assistant message_end's model error (a provider refusal or failure after
 * pi's own retries), if this is one.
 */
export function modelErrorOf(event: PiEvent): string | undefined {
  if (event.type !== "message_end") return undefined;
  const message = event.message as
    | { role?: string; stopReason?: string; errorMessage?: string }
    | undefined;
  if (message?.role !== "assistant" || message.stopReason !== "error") return undefined;
  return String(message.errorMessage ?? "unknown model error");
}

/** A one-line description of what the worker is doing, or undefined for events not worth showing. */
export function describeEvent(event: PiEvent): string | undefined {
  if (event.type === "tool_execution_start") {
    return `→ ${String(event.toolName)} ${short(JSON.stringify(event.args ?? {}), 120)}`;
  }
  if (event.type === "tool_execution_end") {
    const result = event.result as { content?: unknown } | undefined;
    const text = short(textOf(result?.content), 140);
    const refused = /denied by gateway|x-roster-verdict|budget exceeded/.test(text);
    const mark = refused ? "⊘ refused" : event.isError ? "✗" : "←";
    return `  ${mark} ${text || "(no output)"}`;
  }
  if (event.type === "message_end") {
    const message = event.message as
      | { role?: string; stopReason?: string; errorMessage?: string }
      | undefined;
    if (message?.role === "assistant" && message.stopReason === "error") {
      return `  ✗ model error: ${short(String(message.errorMessage ?? "unknown"), 160)}`;
    }
  }
  return undefined;
}
