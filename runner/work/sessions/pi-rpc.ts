import { assistantText, type PiEvent, parseEvent } from "../runs/pi-events.ts";

/**
 * pi's RPC mode, host side: JSON lines in on the box's stdin, events and
 * command responses out on its stdout, read line by line by the run owner
 * within their bound (runs/box-output.ts). A turn is one `prompt` command; it is over at
 * `agent_settled`, not `agent_end`, because retries and follow-ups can come
 * after `agent_end`. One turn at a time: the session's queue sees to that.
 */
export interface TurnListener {
  /** The message's turn begins (it waited behind others until now): typing indicators start here. */
  onStart?(): void;
  /** A piece of the worker's reply as the model writes it. */
  onText?(delta: string): void;
  /** Every event of the turn (tool calls, messages …) as it arrives. */
  onEvent?(event: PiEvent): void;
  /**
   * The prompt line has been handed to the box's stdin: what happens before
   * this is the host's own work on a message (bench/sessions.ts times it).
   */
  onSent?(): void;
}

export interface TurnResult {
  /** The assistant messages of the turn, in order (tool-call rounds included). */
  texts: string[];
  /** How many tool calls the worker made, by tool name. */
  tools: string[];
  /** The model failed the turn (provider error after pi's own retries). */
  modelError: string | undefined;
}

interface ActiveTurn {
  id: string;
  listener: TurnListener;
  result: TurnResult;
  resolve(result: TurnResult): void;
  reject(error: Error): void;
}

/**
 * How a turn's message is written to the agent's stdin: pi's RPC `prompt`
 * command, or Claude Code's stream JSON user message (whose events the run
 * owner reads as pi's, runs/agent-events.ts, so the rest of a turn is the same).
 */
export type PromptLine = (id: string, message: string) => string;

export const PI_PROMPT: PromptLine = (id, message) =>
  JSON.stringify({ id, type: "prompt", message });

export const CLAUDE_PROMPT: PromptLine = (_id, message) =>
  JSON.stringify({ type: "user", message: { role: "user", content: message } });

export class PiRpc {
  private active: ActiveTurn | undefined;
  private counter = 0;

  constructor(
    private readonly stdin: NodeJS.WritableStream,
    /** Every line pi writes, for the run's record and the idle clock. */
    private readonly onLine: (line: string) => void = () => undefined,
    private readonly promptLine: PromptLine = PI_PROMPT,
  ) {}

  get busy(): boolean {
    return this.active !== undefined;
  }

  /** Sends one prompt; settles at agent_settled, or rejects if pi refuses it. */
  prompt(message: string, listener: TurnListener = {}): Promise<TurnResult> {
    if (this.active) return Promise.reject(new Error("a turn is already running"));
    const id = `turn-${++this.counter}`;
    return new Promise<TurnResult>((resolve, reject) => {
      this.active = {
        id,
        listener,
        result: { texts: [], tools: [], modelError: undefined },
        resolve,
        reject,
      };
      this.stdin.write(`${this.promptLine(id, message)}\n`, (error) => {
        if (error) this.fail(new Error(`the box's stdin refused the message: ${error.message}`));
        else listener.onSent?.();
      });
    });
  }

  /** Ends the turn in flight (the box died, or a ceiling passed). */
  fail(error: Error): void {
    const turn = this.active;
    this.active = undefined;
    turn?.reject(error);
  }

  /** Feed it each line of the box's stdout as it comes. */
  line(raw: string): void {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    this.onLine(line);
    const event = parseEvent(line);
    const turn = this.active;
    if (!event || !turn) return;
    if (event.type === "response") {
      if (event.id !== turn.id) return;
      if (event.success !== true) {
        this.fail(new Error(`pi refused the message: ${String(event.error ?? "no reason given")}`));
        return;
      }
      const data = event.data as { disposition?: string } | undefined;
      // an extension consumed it: no run starts, so no agent_settled will come
      if (data?.disposition === "handled") this.settle();
      return;
    }
    turn.listener.onEvent?.(event);
    if (event.type === "message_update") {
      const update = event.assistantMessageEvent as { type?: string; delta?: unknown } | undefined;
      if (update?.type === "text_delta" && typeof update.delta === "string")
        turn.listener.onText?.(update.delta);
    } else if (event.type === "message_end") {
      const text = assistantText(event);
      if (text) turn.result.texts.push(text);
      const message = event.message as
        | { role?: string; stopReason?: string; errorMessage?: string }
        | undefined;
      // pi retries a failed call itself: only an error that is the last word counts
      if (message?.role === "assistant")
        turn.result.modelError =
          message.stopReason === "error"
            ? String(message.errorMessage ?? "unknown model error")
            : undefined;
    } else if (event.type === "tool_execution_start") {
      turn.result.tools.push(String(event.toolName));
    } else if (event.type === "agent_settled") {
      this.settle();
    }
  }

  private settle(): void {
    const turn = this.active;
    this.active = undefined;
    turn?.resolve(turn.result);
  }
}
