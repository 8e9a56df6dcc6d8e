import { type ChildProcess, fork } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { chatPlatforms } from "../../ground/chat/terms.ts";
import type { BotBinding } from "../../ground/config/bot-bindings.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { errorMessage } from "../../ground/errors.ts";
import { replaceFileSync } from "../../ground/files/atomic-replace.ts";
import { PROJECT_ROOT } from "../../ground/version.ts";
import type { SessionRouter } from "../../work/sessions/router.ts";
import { UNAUTHORISED_EXIT } from "./child.ts";
import {
  type CommandRequest,
  type CompleteRequest,
  type ConnectionState,
  isListenerMessage,
  type ListenerMessage,
  type ServerMessage,
} from "./protocol.ts";

/**
 * What the supervisor asks of the desk's approvals from chat
 * (actions/offers.ts, handed in by the server): the gates due to be offered
 * through a live listener, and the verdict on a press.
 */
export interface ChatApprovals {
  due(canOffer: (worker: string, platform: string) => boolean): Array<{
    gate_id: string;
    worker: string;
    channel: string;
    platform: string;
    expires_at: string;
    text: string;
  }>;
  decide(press: {
    gate_id: string;
    verdict: "approve" | "deny";
    user: string;
    channel: string;
  }): Promise<{ text: string; private: boolean; settled: boolean }>;
}
/**
 * What the supervisor asks of the host's slash-command core (services/slash/,
 * handed in by the server): the answer to a command given through a
 * worker's bot, and the choices for an option being typed.
 */
export interface ChatCommands {
  answer(worker: string, request: CommandRequest): Promise<{ text: string; room: boolean }>;
  complete(
    worker: string,
    request: CompleteRequest,
  ): Promise<Array<{ name: string; value: string }>>;
}

/**
 * Runs one child process per bot binding and keeps it running: whatever ends
 * a listener (a crash on a platform's garbage, an OOM, a kill) is followed by
 * a restart after a jittered, doubling delay (reset once it has stayed up a
 * while). Inbound messages go to the session router; the answers about them
 * go back to the child. The operator's view of every binding is kept in
 * state/listeners.json for `roster channel ls` and `roster server status`.
 */
export interface ListenerStatus {
  worker: string;
  platform: string;
  credential: string;
  state: ConnectionState;
  since: string;
  last_event?: string;
  detail?: string;
  restarts: number;
  /** The listener process now (none while it waits to restart). */
  pid?: number;
}

export interface Backoff {
  baseMs: number;
  maxMs: number;
  /** Up this long, a listener's next crash starts the delays over. */
  stableMs: number;
}

export const DEFAULT_BACKOFF: Backoff = { baseMs: 1_000, maxMs: 60_000, stableMs: 60_000 };

const ROSTER_BIN = join(PROJECT_ROOT, "bin/roster.mjs");

/**
 * How a binding's listener process starts: a child speaking protocol.ts over
 * its IPC channel (its side is child.ts). The supervisor keeps whatever it
 * is given running the same way.
 */
export type LaunchListener = (binding: BotBinding, env: NodeJS.ProcessEnv) => ChildProcess;

/** `roster server listener <worker> <platform>`, forked from the roster command itself. */
export const forkListener: LaunchListener = (binding, env) =>
  fork(ROSTER_BIN, ["server", "listener", binding.worker, binding.platform], {
    env,
    execArgv: [],
    stdio: ["ignore", "ignore", "inherit", "ipc"],
  });

interface Supervised {
  binding: BotBinding;
  child: ChildProcess | undefined;
  status: ListenerStatus;
  failures: number;
  startedAt: number;
  timer: NodeJS.Timeout | undefined;
}

export function listenersFile(paths: RosterPaths): string {
  return join(paths.state, "listeners.json");
}

/** The last view a server wrote (empty when none ran). */
export function readListenerStatuses(paths: RosterPaths): ListenerStatus[] {
  try {
    return JSON.parse(readFileSync(listenersFile(paths), "utf8")) as ListenerStatus[];
  } catch {
    return [];
  }
}

export class ListenerSupervisor {
  private readonly supervised: Supervised[] = [];
  private stopping = false;
  private writeTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly options: {
      paths: RosterPaths;
      router: SessionRouter;
      note: (text: string) => void;
      env: NodeJS.ProcessEnv;
      backoff?: Backoff;
      /** Approvals from chat; without it presses are answered "off". */
      offers?: ChatApprovals;
      /** Commands from chat; without it they are answered "off". */
      commands?: ChatCommands;
      /** How a listener process starts; forkListener (the roster command) unless said. */
      launch?: LaunchListener;
    },
  ) {}

  /** Offers the gates that are due through the listener of their worker and platform. */
  offerDue(): void {
    const desk = this.options.offers;
    if (!desk) return;
    const live = (worker: string, platform: string) =>
      this.supervised.find(
        (entry) =>
          entry.binding.worker === worker &&
          entry.binding.platform === platform &&
          entry.child?.connected === true &&
          entry.status.state === "connected",
      );
    for (const offer of desk.due((worker, platform) => live(worker, platform) !== undefined)) {
      const child = live(offer.worker, offer.platform)?.child;
      this.options.note(`offering gate ${offer.gate_id} of ${offer.worker} in ${offer.channel}`);
      child?.send(
        {
          type: "offer",
          ref: offer.gate_id,
          channel: offer.channel,
          text: offer.text,
          expires_at: offer.expires_at,
        } satisfies ServerMessage,
        () => undefined,
      );
    }
  }

  start(bindings: BotBinding[]): void {
    for (const binding of bindings) {
      const entry: Supervised = {
        binding,
        child: undefined,
        status: {
          worker: binding.worker,
          platform: binding.platform,
          credential: binding.credential,
          state: "connecting",
          since: new Date().toISOString(),
          restarts: 0,
        },
        failures: 0,
        startedAt: 0,
        timer: undefined,
      };
      this.supervised.push(entry);
      this.launch(entry);
    }
    this.persist();
  }

  statuses(): ListenerStatus[] {
    return this.supervised.map((entry) => ({ ...entry.status }));
  }

  async stop(): Promise<void> {
    this.stopping = true;
    const exits = this.supervised.map((entry) => {
      if (entry.timer) clearTimeout(entry.timer);
      const child = entry.child;
      this.setState(entry, "stopped");
      if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const kill = setTimeout(() => child.kill("SIGKILL"), 5_000);
        child.once("exit", () => {
          clearTimeout(kill);
          resolve();
        });
        if (child.connected) child.disconnect();
        child.kill("SIGTERM");
      });
    });
    await Promise.all(exits);
    if (this.writeTimer) clearTimeout(this.writeTimer);
    this.writeNow();
  }

  private launch(entry: Supervised): void {
    const { worker, platform } = entry.binding;
    entry.startedAt = Date.now();
    const child = (this.options.launch ?? forkListener)(entry.binding, this.options.env);
    entry.child = child;
    if (child.pid) entry.status.pid = child.pid;
    child.on("error", () => undefined);
    child.on("message", (message: unknown) => {
      if (!isListenerMessage(message)) {
        this.options.note(`listener ${worker}/${platform}: ignored a malformed message`);
        return;
      }
      this.onMessage(entry, message);
    });
    child.once("exit", (code, signal) => {
      entry.child = undefined;
      delete entry.status.pid;
      if (this.stopping) return;
      const upFor = Date.now() - entry.startedAt;
      const backoff = this.options.backoff ?? DEFAULT_BACKOFF;
      entry.failures = upFor >= backoff.stableMs ? 1 : entry.failures + 1;
      // the exit status says so even if the child's last words were lost
      const unauthorised = entry.status.state === "unauthorised" || code === UNAUTHORISED_EXIT;
      if (unauthorised && entry.status.state !== "unauthorised")
        this.setState(
          entry,
          "unauthorised",
          `the listener exited ${UNAUTHORISED_EXIT}: its bot credential is missing or refused`,
        );
      const base = unauthorised
        ? backoff.maxMs
        : Math.min(backoff.maxMs, backoff.baseMs * 2 ** (entry.failures - 1));
      const delay = Math.round(base * (0.5 + Math.random()));
      const how = signal ? `signal ${signal}` : `exit code ${code}`;
      if (!unauthorised)
        this.setState(entry, "crashed", `${how}; restarting in ${(delay / 1000).toFixed(1)} s`);
      this.options.note(
        `listener ${worker}/${platform} ended (${how}); restarting in ${(delay / 1000).toFixed(1)} s`,
      );
      entry.timer = setTimeout(() => {
        entry.timer = undefined;
        if (this.stopping) return;
        entry.status.restarts++;
        this.launch(entry);
      }, delay);
    });
  }

  /**
   * A command or a completion from a child: the person is put on the binding's
   * platform and the channel must be one of its channels, whatever the child says.
   */
  private onCommand(
    entry: Supervised,
    message: Extract<ListenerMessage, { type: "command" | "complete" }>,
  ): void {
    const { platform, worker } = entry.binding;
    const answer = (reply: ServerMessage) => {
      if (entry.child?.connected) entry.child.send(reply, () => undefined);
    };
    const { ref } = message;
    const asked = message.type === "command" ? message.command : message.complete;
    const user = `${platform}:${asked.user.replace(/^[a-z]+:/, "")}`;
    const commands = this.options.commands;
    const prefix = chatPlatforms().find((one) => one.name === platform)?.channelPrefix;
    const foreign = prefix === undefined || !asked.channel.startsWith(prefix);
    if (message.type === "complete") {
      if (!commands || foreign) {
        answer({ type: "completed", ref, choices: [] });
        return;
      }
      void commands
        .complete(worker, { ...message.complete, user })
        .catch(() => [])
        .then((choices) => answer({ type: "completed", ref, choices }));
      return;
    }
    if (!commands || foreign) {
      const text = foreign
        ? `Not done: ${asked.channel} is not a ${platform} channel.`
        : "Commands from chat are off here.";
      answer({ type: "answered", ref, text, room: false });
      return;
    }
    void commands
      .answer(worker, { ...message.command, user })
      .catch((error: unknown) => ({ text: `Not done: ${errorMessage(error)}.`, room: false }))
      .then((reply) => answer({ type: "answered", ref, ...reply }));
  }

  private onMessage(entry: Supervised, message: ListenerMessage): void {
    const { binding } = entry;
    if (message.type === "status") {
      this.setState(entry, message.state, message.detail);
      return;
    }
    entry.status.last_event = new Date().toISOString();
    this.persist();
    if (message.type === "event") return;
    if (message.type === "command" || message.type === "complete") {
      this.onCommand(entry, message);
      return;
    }
    if (message.type === "decide") {
      const { ref } = message;
      const answer = (reply: ServerMessage) => {
        if (entry.child?.connected) entry.child.send(reply, () => undefined);
      };
      const desk = this.options.offers;
      if (!desk) {
        answer({
          type: "decided",
          ref,
          text: "Approvals from chat are off here.",
          private: true,
          settled: false,
        });
        return;
      }
      // the presser's platform is the binding's, whatever the child says
      const user = `${binding.platform}:${message.user.replace(/^[a-z]+:/, "")}`;
      void desk
        .decide({ ...message, user })
        .then((reply) => answer({ type: "decided", ref, ...reply }));
      return;
    }
    // the child speaks for its own binding only, whatever it says
    const inbound = { ...message.inbound, worker: binding.worker, provider: binding.platform };
    if (message.type === "record") {
      try {
        this.options.router.record(inbound);
      } catch (error) {
        this.options.note(`listener ${binding.worker}/${binding.platform}: ${errorMessage(error)}`);
      }
      return;
    }
    const { ref } = message;
    const send = (answer: ServerMessage) => {
      const child = entry.child;
      if (child?.connected) child.send(answer, () => undefined);
    };
    this.options.router
      .deliver(inbound, {
        onRecorded: () => send({ type: "recorded", ref }),
        onStart: () => send({ type: "turn-started", ref }),
      })
      .then(
        () => send({ type: "turn-done", ref }),
        (error: unknown) => send({ type: "turn-failed", ref, error: errorMessage(error) }),
      );
  }

  private setState(entry: Supervised, state: ConnectionState, detail?: string): void {
    if (entry.status.state !== state) entry.status.since = new Date().toISOString();
    entry.status.state = state;
    if (detail) entry.status.detail = detail;
    else delete entry.status.detail;
    this.persist();
  }

  /** Coalesced: a busy channel's events don't rewrite the file for every message. */
  private persist(): void {
    if (this.writeTimer) return;
    this.writeTimer = setTimeout(() => {
      this.writeTimer = undefined;
      this.writeNow();
    }, 250);
    this.writeTimer.unref();
  }

  private writeNow(): void {
    mkdirSync(this.options.paths.state, { recursive: true });
    replaceFileSync(
      listenersFile(this.options.paths),
      `${JSON.stringify(this.statuses(), null, 2)}\n`,
      { mode: 0o644 },
    );
  }
}
