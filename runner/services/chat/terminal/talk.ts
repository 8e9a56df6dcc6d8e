import { userInfo } from "node:os";
import { createInterface } from "node:readline";
import type { RosterPaths } from "../../../ground/config/paths.ts";
import { errorMessage } from "../../../ground/errors.ts";
import { groupOf } from "../../../records/channels/links.ts";
import { describeEvent } from "../../../work/runs/pi-events.ts";
import { type Inbound, SessionError, SessionRouter } from "../../../work/sessions/router.ts";
import { termChannelId } from "./ids.ts";
import { terminal } from "./platform.ts";

/**
 * `roster talk <worker>`: the terminal as a channel (term-<user>-<worker>,
 * trusted, history recorded). Each line typed is a message; lines typed while
 * the worker is busy queue behind it and become their own turns, in order,
 * in the same box. The reply is streamed as the model writes it. Ctrl-D ends
 * at once: the box is stopped and its record finished, even mid-turn. Lines
 * starting with "/" are answered here on the host and never reach the worker.
 */
export interface TalkOptions {
  paths: RosterPaths;
  worker: string;
  idleSecs: number | undefined;
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
  /** Notes (sessions starting and ending, tool calls) go here. */
  notes: NodeJS.WritableStream;
  env?: NodeJS.ProcessEnv;
  /**
   * Answers a line starting with "/" on the host (the desk's commands, handed
   * in by the CLI): the text to show, or "quit".
   */
  command: (line: string, user: string, channel: string) => Promise<string>;
  /**
   * Hands a line to a running server as a turn of the session a linked
   * terminal shares with the person's other surfaces (handed in by the CLI);
   * undefined when no server took it.
   */
  handTurn?: (
    turn: { worker: string; channel: string; author: string; text: string },
    io: { write(text: string): void; note(text: string): void; signal: AbortSignal },
  ) => Promise<{ runId: string | undefined; modelError: string | undefined } | undefined>;
}

export const TALK_QUEUE_BOUND = 32;

export function talkUser(env: NodeJS.ProcessEnv = process.env): string {
  try {
    return userInfo().username || env.USER || "operator";
  } catch {
    return env.USER || "operator";
  }
}

/** A line typed at a terminal, as the router takes it: the host user's, who is the operator. */
export function termInbound(worker: string, channel: string, user: string, text: string): Inbound {
  return {
    worker,
    channel,
    provider: terminal.name,
    author: user,
    author_id: `${terminal.name}:${user}`,
    standing: "host-op",
    text,
  };
}

export async function talk(options: TalkOptions): Promise<number> {
  const { worker, output, notes } = options;
  const user = talkUser(options.env);
  const channel = termChannelId(user, worker);
  const note = (text: string) => notes.write(`${text}\n`);
  const router = talkRouter(options, note);
  note(`talking to ${worker} in ${channel}; Ctrl-D ends, /help lists commands`);
  const printer = new TurnPrinter(worker, output, note);
  let pending = 0;
  const turns: Promise<void>[] = [];
  const linked = linkedTo(options.paths, channel);
  const server =
    linked && options.handTurn
      ? new HandedTurns(options.handTurn, { worker, channel, author: user }, output, note, printer)
      : undefined;
  if (server) note(`${channel} is linked with ${linked}: a running server holds the one session`);
  const send = (text: string) => {
    if (!server) return void local(text);
    pending++;
    const turn = server
      .send(text)
      // no server after all: the line gets a session here (the history is still the group's)
      .then((taken) => (taken ? undefined : local(text)))
      .finally(() => {
        pending--;
      });
    turns.push(turn);
  };
  const local = (text: string): Promise<void> => {
    pending++;
    const turn = router
      .deliver(termInbound(worker, channel, user, text), printer.listeners())
      .then(
        (delivered) => printer.done(delivered.result.modelError),
        (error: unknown) => printer.failed(error),
      )
      .finally(() => {
        pending--;
      });
    turns.push(turn);
    return turn;
  };

  const lines = createInterface({ input: options.input, crlfDelay: Number.POSITIVE_INFINITY });
  for await (const raw of lines) {
    const text = raw.trim();
    if (!text) continue;
    if (raw.startsWith("/")) {
      const answer = await options.command(text, user, channel);
      if (answer === "quit") break;
      output.write(`${answer}\n`);
      continue;
    }
    send(text);
  }
  // Ctrl-D at a terminal ends now, mid-turn or not; piped input is answered first
  const interactive = (options.input as { isTTY?: boolean }).isTTY === true;
  if (!interactive) await Promise.allSettled(turns);
  if (pending) note("(ending the session now)");
  server?.end();
  await router.closeAll();
  await Promise.allSettled(turns);
  return 0;
}

/** The terminal's one session router: replies stream to the terminal, sessions are noted. */
function talkRouter(options: TalkOptions, note: (text: string) => void): SessionRouter {
  return new SessionRouter({
    paths: options.paths,
    note: (text) => note(`roster: ${text}`),
    ...(options.env ? { env: options.env } : {}),
    queueBound: TALK_QUEUE_BOUND,
    replyBy: () =>
      "write your reply as plain text; it is shown in the operator's terminal as you write it",
    recordReplies: true,
    ...(options.idleSecs !== undefined ? { idleMs: options.idleSecs * 1000 } : {}),
    onStart: (session) =>
      note(`(session ${session.runId} started in box ${session.containerId.slice(0, 12)})`),
    onEnd: (end) => {
      if (end.error) note(`(session ${end.runId} failed: ${end.error})`);
      else
        note(
          `(session ${end.runId} ended: ${end.endedBy}, ${end.turns} turn${end.turns === 1 ? "" : "s"})`,
        );
    },
  });
}

/**
 * A linked terminal's lines, each handed to the running server as a turn of
 * the group's one session, one after another in the order typed; what the
 * worker sent the terminal is printed when its turn is done.
 */
class HandedTurns {
  private last: Promise<unknown> = Promise.resolve();
  private readonly ending = new AbortController();

  constructor(
    private readonly handTurn: NonNullable<TalkOptions["handTurn"]>,
    private readonly where: { worker: string; channel: string; author: string },
    private readonly output: NodeJS.WritableStream,
    private readonly note: (text: string) => void,
    private readonly printer: TurnPrinter,
  ) {}

  /** Whether a server took the line. */
  send(text: string): Promise<boolean> {
    const turn = this.last.then(() => this.hand(text));
    this.last = turn;
    return turn;
  }

  /** Ctrl-D: lines still waiting are dropped; the session stays the server's. */
  end(): void {
    this.ending.abort();
  }

  private async hand(text: string): Promise<boolean> {
    if (this.ending.signal.aborted) return true;
    const result = await this.handTurn(
      { ...this.where, text },
      {
        write: (reply) => this.output.write(`${this.where.worker}> ${reply}\n`),
        note: this.note,
        signal: this.ending.signal,
      },
    ).catch((error: unknown) => {
      this.printer.failed(error);
      return { runId: undefined, modelError: undefined };
    });
    if (!result) return false;
    this.printer.done(result.modelError);
    return true;
  }
}

/**
 * Writes a turn as it happens: the reply streamed after `worker> `, tool calls
 * and the like as notes on lines of their own, so the two never share a line.
 */
class TurnPrinter {
  /** The reply is mid-line on the output. */
  private writing = false;

  constructor(
    private readonly worker: string,
    private readonly output: NodeJS.WritableStream,
    private readonly note: (text: string) => void,
  ) {}

  listeners(): Parameters<SessionRouter["deliver"]>[1] {
    return {
      onEvent: (event) => {
        if (event.type === "message_start") {
          const message = event.message as { role?: string } | undefined;
          if (message?.role === "assistant") this.writing = false;
        }
        const shown = describeEvent(event);
        if (shown) {
          this.endLine();
          this.note(shown);
        }
      },
      onText: (delta) => {
        if (!this.writing) this.output.write(`${this.worker}> `);
        this.writing = true;
        this.output.write(delta);
      },
    };
  }

  done(modelError: string | undefined): void {
    this.endLine();
    if (modelError) this.note(`  ✗ model error: ${modelError}`);
  }

  failed(error: unknown): void {
    this.endLine();
    const run = error instanceof SessionError ? ` ${error.runId}` : "";
    this.output.write(`(session${run} failed: ${errorMessage(error)})\n`);
  }

  private endLine(): void {
    if (this.writing) this.output.write("\n");
    this.writing = false;
  }
}

/** The surfaces a terminal is linked with, in words; undefined when it isn't (or the links can't be read). */
function linkedTo(paths: RosterPaths, channel: string): string | undefined {
  try {
    return groupOf(paths, channel)
      ?.surfaces.filter((surface) => surface !== channel)
      .join(", ");
  } catch {
    return undefined;
  }
}
