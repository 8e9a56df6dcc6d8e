import { errorMessage } from "../../ground/errors.ts";
import { assistantText, type PiEvent, parseEvent } from "../runs/pi-events.ts";

/**
 * pi's RPC mode, host side: JSON lines in on the box's stdin, events and
 * command responses out on its stdout, read line by line by the run owner
 * within their bound (runs/box-output.ts). A turn is one `prompt` command; it is over at
 * `agent_settled`, not `agent_end`, because retries and follow-ups can come
 * after `agent_end`. One turn at a time: the session's queue sees to that.
 * Another agent's session is driven the same way: its writer (TurnWriter)
 * speaks its protocol, and its stream arrives read as pi's events.
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
 * How the host speaks to the agent on its stdin: pi's RPC `prompt` command,
 * Claude Code's stream JSON user message, or Codex's app-server requests
 * (codex-app-server.ts). The agent's stream reaches PiRpc as pi's events (the
 * run owner reads it, runs/agent-events.ts), so the rest of a turn is the same.
 */
export interface TurnWriter {
  /** Written once as the session opens, before any turn: a handshake, or nothing. */
  readonly opening: readonly string[];
  /** Settles when the agent can take a message; rejects, saying why, if it never will. */
  readonly ready: Promise<void>;
  /** The line that sends a turn's message; a response to it names the turn's `id`. */
  prompt(id: string, message: string): string;
  /** Each of the agent's events, in a turn or between: the lines to write in answer (mostly none). */
  hear(event: PiEvent): string[];
}

/** An agent that takes a message as one line from the start, and asks the host nothing. */
const oneLine = (prompt: TurnWriter["prompt"]): TurnWriter => ({
  opening: [],
  ready: Promise.resolve(),
  prompt,
  hear: () => [],
});

export const PI_WRITER = oneLine((id, message) => JSON.stringify({ id, type: "prompt", message }));

export const CLAUDE_WRITER = oneLine((_id, message) =>
  JSON.stringify({ type: "user", message: { role: "user", content: message } }),
);

export class PiRpc {
  private active: ActiveTurn | undefined;
  private counter = 0;

  constructor(
    private readonly stdin: NodeJS.WritableStream,
    /** Every line pi writes, for the run's record and the idle clock. */
    private readonly onLine: (line: string) => void = () => undefined,
    private readonly writer: TurnWriter = PI_WRITER,
  ) {
    for (const line of writer.opening) this.write(line);
  }

  get busy(): boolean {
    return this.active !== undefined;
  }

  /** Sends one prompt once the agent is ready; settles at agent_settled, or rejects if it refuses it. */
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
      this.writer.ready.then(
        () => {
          // the turn may have ended while the agent got ready (the box died)
          if (this.active?.id !== id) return;
          this.write(this.writer.prompt(id, message), () => listener.onSent?.());
        },
        (error: unknown) => {
          if (this.active?.id === id)
            this.fail(new Error(`the agent can't take messages: ${errorMessage(error)}`));
        },
      );
    });
  }

  /** One line to the box's stdin; a refusal fails the turn in flight. */
  private write(line: string, onWritten: () => void = () => undefined): void {
    this.stdin.write(`${line}\n`, (error) => {
      if (error) this.fail(new Error(`the box's stdin refused a line: ${error.message}`));
      else onWritten();
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
    if (!event) return;
    for (const answer of this.writer.hear(event)) this.write(answer);
    const turn = this.active;
    if (!turn) return;
    if (event.type === "response") {
      if (event.id !== turn.id) return;
      if (event.success !== true) {
        this.fail(
          new Error(`the agent refused the message: ${String(event.error ?? "no reason given")}`),
        );
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
