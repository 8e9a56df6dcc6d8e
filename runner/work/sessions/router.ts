import { chatPlatforms, sendToolName } from "../../ground/chat/terms.ts";
import type { RosterPaths } from "../../ground/config/paths.ts";
import { errorMessage } from "../../ground/errors.ts";
import { historyBlock, messageBlock, turnInput } from "../../records/channels/history.ts";
import { groupOf, homeOf } from "../../records/channels/links.ts";
import {
  appendMessage,
  ensureChannel,
  type MessageRecord,
  readMessages,
} from "../../records/channels/store.ts";
import type { AheadClones } from "../repos/clone.ts";
import type { ReadySessions } from "../runs/run-request.ts";
import type { TurnListener, TurnResult } from "./pi-rpc.ts";
import { Session, type SessionEnd, SessionError } from "./session.ts";

/**
 * Where a channel's messages go: one warm session per (worker, channel),
 * started on the first message and replaced by a fresh one after it ends.
 * The router is the channel layer's only entry: it records every inbound
 * message in the channel's history, frames it as content (never a command),
 * gives a new session's first turn the recent history, and records the
 * worker's reply when the surface shows it directly (the terminal). Each chat
 * platform's adapter only turns its events into `deliver`.
 */
/** The tools that put a turn's answer in front of someone: each chat platform's send tool, and message_user. */
const sends = (tool: string) =>
  tool === "message_user" ||
  chatPlatforms().some((platform) => sendToolName(platform.name) === tool);
const oneLine = (text: string) => {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > 120 ? `${flat.slice(0, 119)}…` : flat;
};

export interface Inbound {
  worker: string;
  channel: string;
  /** The chat platform's name, as the list declares it. */
  provider: string;
  author: string;
  author_id: string;
  /** The sender's standing, e.g. host-op, member, guest. */
  standing: string;
  text: string;
}

export interface Delivered {
  runId: string;
  result: TurnResult;
}

export interface RouterOptions {
  paths: RosterPaths;
  note: (text: string) => void;
  env?: NodeJS.ProcessEnv;
  /** Messages that may wait behind the running turn, per session. */
  queueBound: number;
  /**
   * How a worker's reply reaches this provider's channels (told to the
   * worker); "linked" for a linked group's session, whose messages come from
   * more than one surface.
   */
  replyBy: (provider: string) => string;
  /** Record the worker's reply text in the channel's history (surfaces that show it as is). */
  recordReplies: boolean;
  idleMs?: number;
  /** A server's ready boxes for sessions (docs/ready-boxes.md). */
  ready?: ReadySessions;
  /** A server's clones made ahead of their runs (repos/spare-clones.ts). */
  spares?: AheadClones;
  /** Told when a session starts and when it ends. */
  onStart?: (session: Session, inbound: Inbound) => void;
  onEnd?: (end: SessionEnd, inbound: Inbound) => void;
}

interface Live {
  session: Promise<Session>;
  historyGiven: boolean;
  /** Opened for a linked group: its prompt says to answer on the surface each message came from. */
  linked: boolean;
}

export class SessionRouter {
  private readonly live = new Map<string, Live>();

  constructor(private readonly options: RouterOptions) {}

  /** The sessions running now (for status and shutdown). */
  async sessions(): Promise<Session[]> {
    const settled = await Promise.allSettled([...this.live.values()].map((live) => live.session));
    return settled.flatMap((entry) => (entry.status === "fulfilled" ? [entry.value] : []));
  }

  /** Records a message that does not wake the worker (a room in mention mode): context for later. */
  record(inbound: Omit<Inbound, "worker" | "provider" | "standing">): void {
    const home = this.homeOf(inbound.channel);
    ensureChannel(this.options.paths, home);
    appendMessage(this.options.paths, home, recordOf(inbound, home));
  }

  /** A linked surface's conversation is its group's home's; a links file that can't be read links nothing. */
  private homeOf(channel: string): string {
    try {
      return homeOf(this.options.paths, channel);
    } catch (error) {
      this.options.note(`${channel}: links not followed: ${errorMessage(error)}`);
      return channel;
    }
  }

  /**
   * Hands a message to the worker's session for its channel. `onRecorded`
   * is called once the message is in the channel's history and queued: from
   * then on it is handled (a listener advances its cursor there).
   */
  async deliver(
    inbound: Inbound,
    listener: TurnListener & { onRecorded?(): void } = {},
  ): Promise<Delivered> {
    const { paths } = this.options;
    const home = this.homeOf(inbound.channel);
    const linked = home !== inbound.channel || this.homeLinked(home);
    const key = `${inbound.worker}\u001f${home}`;
    ensureChannel(paths, home);
    let live = this.live.get(key);
    let snapshot: MessageRecord[] | undefined;
    if (live) {
      const current = await live.session.catch(() => undefined);
      // linked or unlinked since it opened: its prompt names the wrong surfaces
      if (current && !current.closing && live.linked !== linked) await current.close();
      if (!current || current.closing) {
        // the ending one gives back its box, its repos and its gateway before a fresh one
        // leases them (an embedded gateway still stopping holds the port); bounded, so a
        // settle that never finishes can't hold the channel
        if (current) await settledOrLater(current.ended);
        if (this.live.get(key) === live) this.live.delete(key);
        // another message may have opened a fresh one meanwhile
        live = this.live.get(key);
      }
    }
    if (!live) {
      // the history a new session starts from is what came before this message
      snapshot = readMessages(paths, home, { last: 500 });
      live = { session: this.open(inbound, home, linked), historyGiven: false, linked };
      this.live.set(key, live);
    }
    appendMessage(paths, home, recordOf(inbound, home));
    listener.onRecorded?.();
    const entry = live;
    let session: Session;
    try {
      session = await entry.session;
    } catch (error) {
      if (this.live.get(key) === entry) this.live.delete(key);
      throw error;
    }
    let history: string | undefined;
    if (!entry.historyGiven) {
      entry.historyGiven = true;
      const limits = session.worker.context;
      history = historyBlock(snapshot ?? [], {
        maxMessages: limits.history_max_messages,
        maxChars: limits.history_max_chars,
      });
    }
    const input = turnInput({
      ...(history ? { history } : {}),
      message: messageBlock({
        provider: inbound.provider,
        channel: inbound.channel,
        author: inbound.author,
        role: inbound.standing,
        text: inbound.text,
      }),
    });
    const result = await session.submit(input, listener);
    // a chat turn's plain text reaches nobody: one that sent nothing is said, not lost quietly
    if (!this.options.recordReplies && result.texts.length && !result.tools.some(sends))
      this.options.note(
        `${inbound.worker} in ${home}: the turn ended in plain text and no send action, so nobody saw it (not delivered): "${oneLine(result.texts.join(" "))}"`,
      );
    if (this.options.recordReplies && result.texts.length) {
      appendMessage(paths, home, {
        ts: new Date().toISOString(),
        author_id: `worker:${inbound.worker}`,
        author: inbound.worker,
        role: "worker",
        content: result.texts.join("\n\n"),
        attachments: [],
      });
    }
    return { runId: session.runId, result };
  }

  /** Ends every session (Ctrl-D, SIGTERM): records finished, boxes gone. */
  async closeAll(): Promise<SessionEnd[]> {
    const sessions = await this.sessions();
    return Promise.all(sessions.map((session) => session.close()));
  }

  /** Whether a surface is the home of a link group (its own messages then go to a linked session too). */
  private homeLinked(home: string): boolean {
    try {
      return groupOf(this.options.paths, home) !== undefined;
    } catch {
      return false;
    }
  }

  private async open(inbound: Inbound, home: string, linked: boolean): Promise<Session> {
    const ready = await this.options.ready?.take(inbound.worker, home);
    const session = await Session.open({
      ...(ready ? { ready } : {}),
      ...(this.options.spares ? { spares: this.options.spares } : {}),
      paths: this.options.paths,
      worker: inbound.worker,
      channel: home,
      provider: inbound.provider,
      replyBy: this.options.replyBy(linked ? "linked" : inbound.provider),
      queueBound: this.options.queueBound,
      note: this.options.note,
      ...(this.options.env ? { env: this.options.env } : {}),
      ...(this.options.idleMs !== undefined ? { idleMs: this.options.idleMs } : {}),
    });
    this.options.onStart?.(session, inbound);
    const key = `${inbound.worker}\u001f${home}`;
    void session.ended.then((end) => {
      const live = this.live.get(key);
      // only forget it if no fresh session has taken its place
      void live?.session.then((current) => {
        if (current === session) this.live.delete(key);
      });
      this.options.onEnd?.(end, inbound);
      // the channel may well speak again soon: its next session finds a box ready
      this.options.ready?.want(inbound.worker, home);
    });
    return session;
  }
}

/** Longer than a settle takes (a repo backstop is bounded at a minute). */
const SETTLE_WAIT_MS = 90_000;

function settledOrLater(ended: Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    ended.then(() => undefined),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, SETTLE_WAIT_MS);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** The history's line for a message; one kept in a linked group's home names the surface it came from. */
function recordOf(
  inbound: Pick<Inbound, "author" | "author_id" | "text" | "channel">,
  home: string,
): MessageRecord {
  return {
    ts: new Date().toISOString(),
    author_id: inbound.author_id,
    author: inbound.author,
    role: "user",
    content: inbound.text,
    attachments: [],
    ...(inbound.channel !== home ? { surface: inbound.channel } : {}),
  };
}

export { SessionError };
