import type { PiEvent } from "./pi-events.ts";

/**
 * The pieces every reader of another agent's stream (agent-events.ts,
 * codex-events.ts) reads a hostile line with and writes pi's events from:
 * each value checked for its type where it is used, and the one thing kept
 * between lines (which tool a call id named) bounded.
 */

/** A reader of one agent's stream (agent-events.ts picks it). */
export interface AgentEvents {
  /** The pi events one line of the agent's stream stands for (often none). */
  read(line: string): PiEvent[];
}

/** How many call ids are remembered for their tool's name: far more than a turn's calls. */
const MAX_CALLS = 1024;

/** The tool names a stream's calls were for, the oldest forgotten first. */
export class CallNames {
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

export const record = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
export const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
export const str = (value: unknown): string | undefined =>
  typeof value === "string" ? value : undefined;

/** An assistant message of these words. */
export const words = (text: string): PiEvent => ({
  type: "message_end",
  message: { role: "assistant", content: [{ type: "text", text }] },
});

/** A turn's end: what a session waits for (sessions/pi-rpc.ts). */
export const settled = (): PiEvent[] => [{ type: "agent_end" }, { type: "agent_settled" }];

/** A turn the model failed: its error as pi's last word, then the settling. */
export const failedTurn = (errorMessage: string): PiEvent[] => [
  {
    type: "message_end",
    message: { role: "assistant", content: [], stopReason: "error", errorMessage },
  },
  ...settled(),
];

/** A tool result's or a message's content (a string, or text and image blocks) as pi's text parts. */
export function resultContent(content: unknown): { type: "text"; text: string }[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return list(content).flatMap((part) => {
    const text = str(record(part)?.text);
    return text === undefined ? [] : [{ type: "text" as const, text }];
  });
}

/** A line that is one JSON object, else nothing. */
export function parseObject(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith("{")) return undefined;
  try {
    return record(JSON.parse(line));
  } catch {
    return undefined;
  }
}
