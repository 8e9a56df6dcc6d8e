/**
 * The Socket Mode half of the Slack stand-in (slack-stand-in.ts): a TEST
 * DOUBLE for Slack's Socket Mode link, which can't be reached from here,
 * speaking its real protocol on the stand-in's HTTP server via WebSocket
 * upgrade — single-use tickets from apps.connections.open, `hello`,
 * `events_api` envelopes, `interactive` ones (a button press's
 * block_actions) and `slash_commands` ones (accepts_response_payload true:
 * the ack's payload is the command's immediate answer), acked by
 * `{envelope_id, payload?}`, redelivery of unacked events and interactions
 * (events_api ones with retry_attempt/retry_reason "timeout"), `disconnect`
 * messages, and pings the way Slack's server sends them.
 *
 * Choices where Slack isn't observable from here, kept simple and fixed:
 * each envelope goes to ONE connected socket (round robin), as Slack spreads
 * events over an app's connections; every delivery gets its own envelope_id
 * (the event_id or trigger_id inside stays), and an ack of any of them
 * settles it; an unacked interaction is sent again just like an event; an
 * unacked slash command is never sent again (Slack tells the user the app
 * didn't answer) and an ack arriving after its timeout settles nothing; a
 * retry that falls due while nothing is connected is spent, not kept; an
 * unknown or reused ticket is refused with HTTP 401.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import WebSocket, { type RawData, WebSocketServer } from "ws";

export interface SocketModeOptions {
  appId: string;
  /** How long an envelope may go unacked before it is sent again (Slack: about 3 s). */
  ackTimeoutMs: number;
  /** How often the server pings each socket; the client drops a link that goes quiet. */
  pingIntervalMs: number;
  /** Deliveries after the first; Slack retries an event 3 times. */
  maxRetries: number;
}

/** One envelope as sent. */
export interface Envelope {
  envelope_id: string;
  type: EnvelopeType;
  /** The Events API event_id, or an interaction's trigger_id. */
  event_id: string;
  /** The event's type, or the interaction's (block_actions). */
  event_type: string;
  retry_attempt: number;
}

/** What the stand-in shows tests of the Socket Mode link. */
export type SocketRecords = Pick<
  SocketModeServer,
  | "envelopes"
  | "acks"
  | "refusedUpgrades"
  | "abandoned"
  | "clientPings"
  | "clientPongs"
  | "strayFrames"
>;

export type EnvelopeType = "events_api" | "interactive" | "slash_commands";

/** One ack as received; `settled` is false for an envelope that was already settled or unknown. */
export interface Ack {
  envelope_id: string;
  payload: unknown;
  settled: boolean;
}

interface Pending {
  /** What an ack settles: the event_id, or the interaction's trigger_id. */
  key: string;
  type: EnvelopeType;
  payload: Record<string, unknown>;
  eventType: string;
  attempt: number;
  /** Deliveries after the first before it is given up. */
  retries: number;
  timer: NodeJS.Timeout | undefined;
  /** Called with the ack's payload when an ack settles it. */
  onAck?: (payload: unknown) => void;
  /** Called when it is given up unacked. */
  onGiveUp?: () => void;
}

/** What a caller of `deliverCommand` hears back: the settling ack, or the timeout. */
export interface CommandHooks {
  onAck: (payload: unknown) => void;
  onTimeout: () => void;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export class SocketModeServer {
  /** Sockets accepted (each greeted with hello). */
  connections = 0;
  /** Upgrades answered 503 while refusing. */
  refusedUpgrades = 0;
  /** Events and interactions that used up their retries unacked (slash commands aren't counted). */
  abandoned = 0;
  /** Pings the clients sent (each answered pong by the socket library, as Slack does). */
  clientPings = 0;
  /** Pongs the clients sent back to the server's pings. */
  clientPongs = 0;
  /** Text frames from clients that weren't JSON objects with an envelope_id. */
  strayFrames = 0;
  readonly envelopes: Envelope[] = [];
  readonly acks: Ack[] = [];

  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly tickets = new Set<string>();
  private readonly sockets = new Set<WebSocket>();
  /** Unacked events by event_id, interactions by trigger_id. */
  private readonly pending = new Map<string, Pending>();
  private readonly eventOfEnvelope = new Map<string, string>();
  private refusing = false;
  private turn = 0;

  constructor(private readonly options: SocketModeOptions) {}

  /** Envelopes sent, first deliveries and retries alike. */
  get deliveries(): number {
    return this.envelopes.length;
  }

  /** Events delivered and not yet acked (still to be retried or abandoned). */
  get unacked(): number {
    return this.pending.size;
  }

  /** Sockets open right now. */
  get connected(): number {
    return this.live().length;
  }

  /** A new single-use link URL, as apps.connections.open hands out. */
  issueUrl(origin: string): string {
    const ticket = randomUUID();
    this.tickets.add(ticket);
    return `${origin}/link/?ticket=${ticket}&app_id=${this.options.appId}`;
  }

  /** While on, upgrades are answered HTTP 503 (apps.connections.open still succeeds). */
  refuse(on: boolean): void {
    this.refusing = on;
  }

  /** The HTTP server's `upgrade` handler. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? "/", "ws://slack.invalid");
    const ticket = url.searchParams.get("ticket") ?? "";
    if (url.pathname !== "/link/") {
      answer(socket, 404, "Not Found");
    } else if (this.refusing) {
      this.refusedUpgrades += 1;
      answer(socket, 503, "Service Unavailable");
    } else if (!this.tickets.delete(ticket)) {
      answer(socket, 401, "Unauthorized");
    } else {
      this.wss.handleUpgrade(req, socket, head, (ws) => this.open(ws));
    }
  }

  /**
   * Sends an Events API callback to one connected socket and tracks its ack.
   * With nothing connected it is dropped (false): Slack doesn't hold events
   * for an app that isn't connected, so a listener catches up from history.
   */
  deliver(payload: Record<string, unknown> & { event_id: string }, eventType: string): boolean {
    return this.enqueue({ key: payload.event_id, type: "events_api", payload, eventType });
  }

  /** Sends an interaction (a block_actions payload) the same way, tracked by its trigger_id. */
  deliverInteraction(
    payload: Record<string, unknown> & { trigger_id: string; type: string },
  ): boolean {
    return this.enqueue({
      key: payload.trigger_id,
      type: "interactive",
      payload,
      eventType: payload.type,
    });
  }

  /**
   * Sends a slash command (its payload keyed by trigger_id) in a
   * `slash_commands` envelope: sent once, never again; the hooks hear the
   * ack that settles it or the timeout.
   */
  deliverCommand(
    payload: Record<string, unknown> & { trigger_id: string; command: string },
    hooks: CommandHooks,
  ): boolean {
    return this.enqueue({
      key: payload.trigger_id,
      type: "slash_commands",
      payload,
      eventType: payload.command,
      retries: 0,
      onAck: hooks.onAck,
      onGiveUp: hooks.onTimeout,
    });
  }

  /** Ends every socket abruptly, no close frame (a network drop). */
  dropAll(): void {
    for (const ws of this.sockets) ws.terminate();
  }

  /** Sends Slack's `disconnect` message to every socket; the client is expected to reconnect. */
  disconnect(reason: string): void {
    const message = JSON.stringify({
      type: "disconnect",
      reason,
      debug_info: { host: "applink-roster-stand-in" },
    });
    for (const ws of this.live()) ws.send(message);
  }

  /** Sends a raw text frame to every socket. */
  garbage(text: string): void {
    for (const ws of this.live()) ws.send(text);
  }

  resetRecords(): void {
    for (const pending of this.pending.values()) clearTimeout(pending.timer);
    this.pending.clear();
    this.eventOfEnvelope.clear();
    this.envelopes.length = 0;
    this.acks.length = 0;
    this.connections = 0;
    this.refusedUpgrades = 0;
    this.abandoned = 0;
    this.clientPings = 0;
    this.clientPongs = 0;
    this.strayFrames = 0;
    this.refusing = false;
  }

  async close(): Promise<void> {
    for (const pending of this.pending.values()) clearTimeout(pending.timer);
    this.pending.clear();
    this.dropAll();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }

  private enqueue(
    envelope: Pick<Pending, "key" | "type" | "payload" | "eventType" | "onAck" | "onGiveUp"> & {
      retries?: number;
    },
  ): boolean {
    if (this.live().length === 0) return false;
    const retries = envelope.retries ?? this.options.maxRetries;
    const pending: Pending = { ...envelope, retries, attempt: 0, timer: undefined };
    this.pending.set(pending.key, pending);
    this.send(pending);
    return true;
  }

  private live(): WebSocket[] {
    return [...this.sockets].filter((ws) => ws.readyState === WebSocket.OPEN);
  }

  private open(ws: WebSocket): void {
    this.connections += 1;
    this.sockets.add(ws);
    const ping = setInterval(() => {
      if (ws.readyState === WebSocket.OPEN) ws.ping(Buffer.from(`ping ${Date.now()}`));
    }, this.options.pingIntervalMs);
    ping.unref();
    ws.on("ping", () => {
      this.clientPings += 1;
    });
    ws.on("pong", () => {
      this.clientPongs += 1;
    });
    ws.on("message", (data, isBinary) => this.receive(data, isBinary));
    // A dropped client surfaces as a socket error; the close that follows is what counts.
    ws.on("error", () => undefined);
    ws.on("close", () => {
      clearInterval(ping);
      this.sockets.delete(ws);
    });
    ws.send(
      JSON.stringify({
        type: "hello",
        num_connections: this.live().length,
        debug_info: {
          host: "applink-roster-stand-in",
          build_number: 1,
          approximate_connection_time: 18060,
        },
        connection_info: { app_id: this.options.appId },
      }),
    );
  }

  private receive(data: RawData, isBinary: boolean): void {
    const text = isBinary ? "" : rawText(data);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (!isRecord(parsed) || typeof parsed.envelope_id !== "string") {
      this.strayFrames += 1;
      return;
    }
    const eventId = this.eventOfEnvelope.get(parsed.envelope_id);
    const pending = eventId === undefined ? undefined : this.pending.get(eventId);
    if (eventId !== undefined && pending) {
      clearTimeout(pending.timer);
      this.pending.delete(eventId);
    }
    this.acks.push({
      envelope_id: parsed.envelope_id,
      payload: parsed.payload,
      settled: pending !== undefined,
    });
    pending?.onAck?.(parsed.payload);
  }

  private send(pending: Pending): void {
    const sockets = this.live();
    const ws = sockets[this.turn % Math.max(sockets.length, 1)];
    this.turn += 1;
    if (ws) {
      const envelopeId = randomUUID();
      this.eventOfEnvelope.set(envelopeId, pending.key);
      this.envelopes.push({
        envelope_id: envelopeId,
        type: pending.type,
        event_id: pending.key,
        event_type: pending.eventType,
        retry_attempt: pending.attempt,
      });
      // Only events_api envelopes say which delivery they are; an interactive one never does.
      const retry =
        pending.type === "events_api"
          ? { retry_attempt: pending.attempt, retry_reason: pending.attempt === 0 ? "" : "timeout" }
          : {};
      ws.send(
        JSON.stringify({
          envelope_id: envelopeId,
          payload: pending.payload,
          type: pending.type,
          // Slack takes an answer in the ack of a slash command; not for block_actions.
          accepts_response_payload: pending.type === "slash_commands",
          ...retry,
        }),
      );
    }
    pending.timer = setTimeout(() => this.expire(pending), this.options.ackTimeoutMs);
    pending.timer.unref();
  }

  private expire(pending: Pending): void {
    if (this.pending.get(pending.key) !== pending) return;
    if (pending.attempt >= pending.retries) {
      this.pending.delete(pending.key);
      if (pending.onGiveUp) pending.onGiveUp();
      else this.abandoned += 1;
      return;
    }
    pending.attempt += 1;
    this.send(pending);
  }
}

function rawText(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString("utf8");
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString("utf8");
  return data.toString("utf8");
}

function answer(socket: Duplex, status: number, reason: string): void {
  const body = JSON.stringify({ ok: false, error: reason.toLowerCase().replaceAll(" ", "_") });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
