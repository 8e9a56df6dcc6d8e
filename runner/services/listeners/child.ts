import { type Credential, readCredential } from "../../boundary/gateway/credentials/vault.ts";
import { botBindings, type Platform } from "../../ground/config/bot-bindings.ts";
import type { ChannelClass } from "../../ground/config/channel-class-schema.ts";
import type { ChatSection } from "../../ground/config/config-schema.ts";
import { listenerScope } from "../../ground/config/edge-scope.ts";
import { loadConfig } from "../../ground/config/load.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { errorMessage, RosterError } from "../../ground/errors.ts";
import type { Inbound } from "../../work/sessions/router.ts";
import type {
  CommandRequest,
  CompleteRequest,
  ConnectionState,
  ListenerMessage,
} from "./protocol.ts";
import { isServerMessage, type ServerMessage } from "./protocol.ts";

/**
 * The listener child's side (`roster server listener <worker> <platform>`,
 * started only by the server): it loads its binding's bot credential, runs
 * the platform's adapter, and speaks the IPC protocol. When the server goes
 * away the channel closes and the child stops: it never outlives its server.
 */
export type ChannelMessage = Omit<Inbound, "worker" | "provider">;

export interface TurnHooks {
  onStart(): void;
  onDone(): void;
  onFailed(error: string): void;
}

/** What an adapter may do: report its state, hand messages over, take notes. */
export interface ListenerHost {
  worker: string;
  paths: RosterPaths;
  /** worker.toml `wake`: the channels whose messages wake the worker; absent, every one. */
  wake?: ChannelClass;
  /**
   * The channels this bot is in the worker's reach at all, by the edge of the
   * connection its credential names (ground/config/edge-scope.ts); absent,
   * every one. A message from outside is dropped, never recorded.
   */
  within?: (channel: string) => boolean;
  /**
   * org.toml `[chat]` as it reads now (where commands are taken, whose word
   * counts); undefined when the config can't be read, which names nothing.
   */
  chat(): ChatSection | undefined;
  status(state: ConnectionState, detail?: string): void;
  event(): void;
  /** Resolves once the server has the message recorded and queued (advance the cursor then). */
  deliver(message: ChannelMessage, hooks: TurnHooks): Promise<void>;
  record(message: ChannelMessage): void;
  /** Someone pressed approve or deny on an offer: the server decides (and audits) it. */
  decide(press: {
    gate_id: string;
    verdict: "approve" | "deny";
    user: string;
    channel: string;
  }): Promise<PressAnswer>;
  /** Someone gave a command: the server judges, answers (and journals) it. */
  command(request: CommandRequest): Promise<CommandReply>;
  /** Choices for an option being typed; none for someone without standing. */
  complete(request: CompleteRequest): Promise<Choice[]>;
  note(text: string): void;
}

export interface CommandReply {
  text: string;
  /** For everyone in the channel; else only for the person who gave it. */
  room: boolean;
}

export interface Choice {
  name: string;
  value: string;
}

/** The server's answer to a press: private to the presser, or settling the offer for all. */
export interface PressAnswer {
  text: string;
  private: boolean;
  settled: boolean;
}

export interface GateOffer {
  gateId: string;
  channel: string;
  text: string;
  expiresAt: string;
}

/** The custom id a button carries: which gate, which verdict. */
export function pressId(gateId: string, verdict: "approve" | "deny"): string {
  return `roster-gate:${gateId}:${verdict}`;
}

export function parsePressId(
  id: string,
): { gateId: string; verdict: "approve" | "deny" } | undefined {
  const match = /^roster-gate:([A-Za-z0-9_-]{1,64}):(approve|deny)$/.exec(id);
  return match?.[1] && (match[2] === "approve" || match[2] === "deny")
    ? { gateId: match[1], verdict: match[2] }
    : undefined;
}

export interface ChatAdapter {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Posts a gate's offer with approve / deny buttons. */
  offer?(offer: GateOffer): Promise<void>;
}

export type AdapterFactory = (host: ListenerHost, credential: Credential) => ChatAdapter;

/** How long a command may take on the server (an approval that sends); a platform's answer token outlives it. */
const COMMAND_ANSWER_MS = 5 * 60_000;
/** Discord wants the choices within 3 s: later ones are of no use. */
const CHOICES_MS = 2_500;
const NO_ANSWER: CommandReply = {
  text: "Not done: the server did not answer in time; the command may still have run (roster approvals, roster task ls)",
  room: false,
};

/** Exit status when the bot's credential is missing or refused: restarted only slowly. */
export const UNAUTHORISED_EXIT = 3;

/** The platform refused the bot's token: an operator must act; retrying fast won't help. */
export class Unauthorised extends Error {
  override name = "Unauthorised";
}

export async function serveListener(
  paths: RosterPaths,
  worker: string,
  platform: Platform,
  adapterFor: AdapterFactory,
): Promise<void> {
  const send = process.send?.bind(process);
  if (!send)
    throw new RosterError("roster server listener is started by roster server start", {
      exitCode: 2,
    });
  // resolves once the message is handed to the channel: a child about to exit waits for it
  const say = (message: ListenerMessage) =>
    new Promise<void>((resolve) => {
      if (!process.connected) return resolve();
      send(message, () => resolve());
    });
  const note = (text: string) =>
    process.stderr.write(`roster: listener ${worker}/${platform}: ${text}\n`);

  const config = loadConfig(paths.config, { vaultDir: paths.vault });
  const binding = botBindings(config.workers).find(
    (b) => b.worker === worker && b.platform === platform,
  );
  const credential = binding ? readCredential(paths.vault, binding.credential) : undefined;
  if (!binding || !credential) {
    const why = binding
      ? `no credential "${binding.credential}" in the vault (roster login ${binding.credential} --field token=…)`
      : `worker ${worker} has no [channels] ${platform} binding`;
    await say({ type: "status", state: "unauthorised", detail: why });
    note(why);
    process.exit(UNAUTHORISED_EXIT);
  }

  const link = new ServerLink(say, note);
  process.on("message", (message: unknown) => {
    if (isServerMessage(message)) link.answer(message);
  });
  const wake = config.workers.get(worker)?.wake;
  const within = listenerScope(config.connections, binding.credential, worker);
  const host = {
    ...link.host(paths, worker, platform),
    ...(wake ? { wake } : {}),
    ...(within ? { within } : {}),
  };
  let adapter: ChatAdapter | undefined;
  const stopped = new Promise<void>((resolve) => {
    process.once("disconnect", resolve);
    process.once("SIGTERM", resolve);
  });
  try {
    adapter = adapterFor(host, credential);
    link.adapter = adapter;
    await adapter.start();
  } catch (error) {
    await adapter?.stop().catch(() => undefined);
    if (error instanceof Unauthorised) {
      const why = `the ${platform} bot "${binding.credential}" was refused: ${error.message}`;
      await say({ type: "status", state: "unauthorised", detail: why });
      note(why);
      process.exit(UNAUTHORISED_EXIT);
    }
    note(`could not start: ${errorMessage(error)}`);
    process.exit(1);
  }
  await stopped;
  setTimeout(() => process.exit(0), 5_000).unref();
  await adapter?.stop().catch(() => undefined);
  process.exit(0);
}

/**
 * The child's half of its conversation with the server: what the adapter
 * asks goes out with a ref, and each answer is matched back to its request
 * (a message recorded, a turn started, done or failed; a button's decision;
 * an offer to post).
 */
class ServerLink {
  private readonly pending = new Map<
    string,
    { hooks: TurnHooks; recorded: () => void; refused: (error: Error) => void; seen: boolean }
  >();
  private readonly presses = new Map<string, (answer: PressAnswer) => void>();
  private readonly commands = new Map<string, (reply: CommandReply) => void>();
  private readonly completions = new Map<string, (choices: Choice[]) => void>();
  private counter = 0;
  /** Set once the adapter exists: offers are posted through it. */
  adapter: ChatAdapter | undefined;

  constructor(
    private readonly say: (message: ListenerMessage) => Promise<void>,
    private readonly note: (text: string) => void,
  ) {}

  answer(message: ServerMessage): void {
    if (message.type === "offer") {
      const offer = {
        gateId: message.ref,
        channel: message.channel,
        text: message.text,
        expiresAt: message.expires_at,
      };
      void this.adapter
        ?.offer?.(offer)
        .catch((error: unknown) => this.note(`an offer was not posted: ${errorMessage(error)}`));
      return;
    }
    if (message.type === "decided") {
      this.presses.get(message.ref)?.({
        text: message.text,
        private: message.private,
        settled: message.settled,
      });
      this.presses.delete(message.ref);
      return;
    }
    if (message.type === "answered") {
      this.commands.get(message.ref)?.({ text: message.text, room: message.room });
      this.commands.delete(message.ref);
      return;
    }
    if (message.type === "completed") {
      this.completions.get(message.ref)?.(message.choices);
      this.completions.delete(message.ref);
      return;
    }
    const entry = this.pending.get(message.ref);
    if (!entry) return;
    if (message.type === "recorded") {
      entry.seen = true;
      entry.recorded();
    } else if (message.type === "turn-started") entry.hooks.onStart();
    else {
      this.pending.delete(message.ref);
      if (message.type === "turn-done") entry.hooks.onDone();
      else {
        if (!entry.seen) entry.refused(new Error(message.error));
        entry.hooks.onFailed(message.error);
      }
    }
  }

  /**
   * One question to the server, answered by `ref`; a server that doesn't
   * answer within `ms` gets `fallback` said for it, and the entry is gone
   * either way, so unanswered questions never pile up in a listener.
   */
  private ask<T>(
    pending: Map<string, (answer: T) => void>,
    ref: string,
    ms: number,
    fallback: T,
    send: (ref: string) => Promise<void>,
  ): Promise<T> {
    return new Promise<T>((resolve) => {
      const timer = setTimeout(() => {
        pending.delete(ref);
        resolve(fallback);
      }, ms);
      timer.unref();
      pending.set(ref, (answer) => {
        clearTimeout(timer);
        resolve(answer);
      });
      void send(ref);
    });
  }

  /** What the adapter is given: every way it reaches the server. */
  host(paths: RosterPaths, worker: string, platform: Platform): ListenerHost {
    const say = this.say;
    return {
      worker,
      paths,
      chat: () => {
        try {
          return loadConfig(paths.config).org.chat;
        } catch {
          return undefined;
        }
      },
      status: (state, detail) => void say({ type: "status", state, ...(detail ? { detail } : {}) }),
      event: () => void say({ type: "event" }),
      deliver: (message, hooks) =>
        new Promise<void>((recorded, refused) => {
          const ref = `m${++this.counter}`;
          this.pending.set(ref, { hooks, recorded, refused, seen: false });
          void say({ type: "inbound", ref, inbound: { ...message, worker, provider: platform } });
        }),
      record: (message) =>
        void say({ type: "record", inbound: { ...message, worker, provider: platform } }),
      decide: (press) =>
        new Promise<PressAnswer>((resolve) => {
          const ref = `p${++this.counter}`;
          this.presses.set(ref, resolve);
          void say({ type: "decide", ref, ...press });
        }),
      command: (command) =>
        this.ask(this.commands, `c${++this.counter}`, COMMAND_ANSWER_MS, NO_ANSWER, (ref) =>
          say({ type: "command", ref, command }),
        ),
      complete: (complete) =>
        this.ask(this.completions, `a${++this.counter}`, CHOICES_MS, [], (ref) =>
          say({
            type: "complete",
            ref,
            // what is being typed is short on every platform (Discord: 100)
            complete: { ...complete, partial: complete.partial.slice(0, 100) },
          }),
        ),
      note: this.note,
    };
  }
}
