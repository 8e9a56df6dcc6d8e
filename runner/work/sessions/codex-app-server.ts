import { ROSTER_VERSION } from "../../ground/version.ts";
import type { PiEvent } from "../runs/pi-events.ts";
import type { TurnWriter } from "./pi-rpc.ts";

/**
 * The host's side of `codex app-server` for a Codex worker's warm session
 * (docs/agents.md): JSON-RPC without its "jsonrpc" field, one message a line
 * on the box's stdin. As the session opens it shakes hands (`initialize`,
 * `initialized`) and starts one thread with the session's settings
 * (runs/codex-command.ts codexThread); each turn is a `turn/start` on that
 * thread, the first held until the thread's id is known. What Codex writes
 * back arrives read as pi's events (runs/codex-events.ts): the answers to
 * these requests as `response` events, a request of its own as an
 * `agent_request` event, answered here so no turn waits on one.
 */

/** The ids of the opening requests, told apart from a turn's (`turn-<n>`). */
const INITIALIZE = "initialize";
const THREAD = "thread";

/**
 * What the host answers when Codex asks to run a command or change a file:
 * yes. The box is the sandbox and the thread asks for no approvals, so none
 * should come; one that does must not leave its turn waiting.
 */
const APPROVALS: Record<string, object> = {
  "item/commandExecution/requestApproval": { decision: "accept" },
  "item/fileChange/requestApproval": { decision: "accept" },
  // the same asked in the protocol's first version
  execCommandApproval: { decision: "approved" },
  applyPatchApproval: { decision: "approved" },
};

/**
 * What the box may make the host write back to it, bounded as its output is
 * (runs/box-output.ts): an id is echoed only as long as Codex's own (short
 * numbers, UUIDs), and a session answers so many requests and no more, so a
 * box that asks without reading its stdin can't fill the host's memory.
 */
const MAX_ID_CHARS = 128;
const MAX_ANSWERS = 1024;

const request = (id: string, method: string, params: object): string =>
  JSON.stringify({ id, method, params });

export class CodexAppServer implements TurnWriter {
  readonly opening: string[];
  readonly ready: Promise<void>;
  private threadId: string | undefined;
  private answered = 0;
  private started: { resolve(): void; reject(error: Error): void } = {
    resolve: () => undefined,
    reject: () => undefined,
  };

  /** `thread`: thread/start's parameters (runs/codex-command.ts codexThread). */
  constructor(thread: object) {
    this.ready = new Promise<void>((resolve, reject) => {
      this.started = { resolve, reject };
    });
    // a refused start is told to the turn that waits for it (PiRpc.prompt), not thrown here
    this.ready.catch(() => undefined);
    this.opening = [
      request(INITIALIZE, "initialize", {
        clientInfo: { name: "roster", title: null, version: ROSTER_VERSION },
        capabilities: null,
      }),
      JSON.stringify({ method: "initialized" }),
      request(THREAD, "thread/start", thread),
    ];
  }

  prompt(id: string, message: string): string {
    return request(id, "turn/start", {
      threadId: this.threadId,
      input: [{ type: "text", text: message, text_elements: [] }],
    });
  }

  hear(event: PiEvent): string[] {
    if (event.type === "agent_request") return this.answer(event);
    if (event.type === "response") this.opened(event);
    return [];
  }

  /** The handshake's and thread/start's answers: the thread's id, or why there is none. */
  private opened(event: PiEvent): void {
    if (event.id !== INITIALIZE && event.id !== THREAD) return;
    if (event.success !== true) {
      const what = event.id === THREAD ? "start a thread" : "shake hands";
      this.started.reject(
        new Error(`Codex would not ${what}: ${String(event.error ?? "no reason given")}`),
      );
      return;
    }
    // the first thread is the session's; a second answer is not one Codex would send
    if (event.id !== THREAD || this.threadId !== undefined) return;
    const data = event.data as { thread?: { id?: unknown } } | undefined;
    const id = data?.thread?.id;
    if (typeof id !== "string" || !id || id.length > MAX_ID_CHARS) {
      this.started.reject(new Error("Codex started a thread without an id roster can use"));
      return;
    }
    this.threadId = id;
    this.started.resolve();
  }

  /** A request Codex made of the host, answered: an approval with yes, anything else refused. */
  private answer(event: PiEvent): string[] {
    const { id, method } = event;
    if (typeof id === "string" ? id.length > MAX_ID_CHARS : typeof id !== "number") return [];
    if (this.answered >= MAX_ANSWERS) return [];
    this.answered++;
    const approval = typeof method === "string" ? APPROVALS[method] : undefined;
    if (approval) return [JSON.stringify({ id, result: approval })];
    // no one is there to answer a question or log in: Codex carries on without it
    return [
      JSON.stringify({
        id,
        error: { code: -32601, message: "roster answers no such request in a session" },
      }),
    ];
  }
}
