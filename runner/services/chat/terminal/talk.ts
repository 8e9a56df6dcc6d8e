import { userInfo } from "node:os";
import { createInterface } from "node:readline";
import type { RosterPaths } from "../../../ground/config/paths.ts";
import { errorMessage } from "../../../ground/errors.ts";
import { describeEvent } from "../../../work/runs/pi-events.ts";
import { SessionError, SessionRouter } from "../../../work/sessions/router.ts";
import { termChannelId } from "./ids.ts";

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
}

export const TALK_QUEUE_BOUND = 32;

export function talkUser(env: NodeJS.ProcessEnv = process.env): string {
  try {
    return userInfo().username || env.USER || "operator";
  } catch {
    return env.USER || "operator";
  }
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
  const send = (text: string) => {
    pending++;
    const message = {
      worker,
      channel,
      provider: "term",
      author: user,
      author_id: `term:${user}`,
      standing: "host-op" as const,
      text,
    };
    const turn = router
      .deliver(message, printer.listeners())
      .then(
        (delivered) => printer.done(delivered.result.modelError),
        (error: unknown) => printer.failed(error),
      )
      .finally(() => {
        pending--;
      });
    turns.push(turn);
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
