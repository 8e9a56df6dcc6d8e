/**
 * The gateway half of the Discord stand-in (discord-stand-in.ts): a TEST
 * DOUBLE for Discord's gateway, which can't be reached from here, speaking
 * its real protocol (v10, JSON encoding, no compression) on the stand-in's
 * HTTP server via WebSocket upgrade — HELLO, heartbeats and their ACKs,
 * IDENTIFY → READY, RESUME → replay + RESUMED, INVALID_SESSION, RECONNECT,
 * and Discord's 4xxx close codes. Sessions outlive their sockets the way
 * Discord's do, so dispatches that happen while a client is away are replayed
 * when it resumes.
 */
import { randomBytes } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import {
  type APIUser,
  type ApplicationFlags,
  GatewayCloseCodes,
  GatewayDispatchEvents,
  GatewayOpcodes,
  type GatewayReadyDispatchData,
} from "discord-api-types/v10";
import WebSocket, { type RawData, WebSocketServer } from "ws";

/** What a dispatch builder sees of a session: its intents decide what it's sent. */
export interface SessionView {
  readonly id: string;
  readonly intents: number;
}

interface Session extends SessionView {
  seq: number;
  /** Every dispatch of the session, kept so a RESUME can replay what a dropped socket missed. */
  readonly sent: { op: GatewayOpcodes.Dispatch; s: number; t: string; d: unknown }[];
  socket: WebSocket | undefined;
}

interface Connection {
  session: Session | undefined;
  /** Set when the stand-in closed the socket, so its close code isn't read as the client's choice. */
  closedByServer: boolean;
}

export interface GatewayOptions {
  token: string;
  heartbeatInterval: number;
  botUser: APIUser;
  applicationId: string;
  /**
   * The guilds the bot is in, listed in READY as unavailable (as Discord
   * does). The GUILD_CREATE that Discord sends for each after READY is not
   * sent: nothing here needs a guild's full object.
   */
  guilds: string[];
  /** The gateway's own URL, for resume_gateway_url (known once the server listens). */
  url: () => string;
}

/** Ops a client may send once identified that the stand-in accepts without acting on. */
const ACCEPTED_OPS = new Set<number>([
  GatewayOpcodes.PresenceUpdate,
  GatewayOpcodes.VoiceStateUpdate,
  GatewayOpcodes.RequestGuildMembers,
]);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export class DiscordGateway {
  /** Successful IDENTIFYs (each answered READY). */
  identifies = 0;
  /** Successful RESUMEs (each answered with the replay and RESUMED). */
  resumes = 0;
  /** RESUMEs of an unknown session, answered op 9 with d:false. */
  invalidSessions = 0;
  /** Heartbeats received (each answered op 11). */
  heartbeats = 0;
  /** Upgrades answered 503 while refusing. */
  refusedUpgrades = 0;
  /** The query string each accepted connection opened with (e.g. "v=10&encoding=json"). */
  readonly queries: string[] = [];
  /** Every IDENTIFY's `d`, token included, as it arrived. */
  readonly identifyPayloads: Record<string, unknown>[] = [];
  /** Every closed socket: its close code and which side closed it. */
  readonly closes: { code: number; by: "client" | "server" }[] = [];

  private refusing = false;
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly connections = new Map<WebSocket, Connection>();
  private readonly sessions = new Map<string, Session>();

  constructor(private readonly options: GatewayOptions) {}

  /** Identified sessions whose socket is open. */
  get connectedSessions(): number {
    let open = 0;
    for (const session of this.sessions.values()) {
      if (session.socket?.readyState === WebSocket.OPEN) open += 1;
    }
    return open;
  }

  /** Forgets what was recorded; live sessions and sockets stay. */
  resetRecords(): void {
    this.identifies = 0;
    this.resumes = 0;
    this.invalidSessions = 0;
    this.heartbeats = 0;
    this.refusedUpgrades = 0;
    this.queries.length = 0;
    this.identifyPayloads.length = 0;
    this.closes.length = 0;
  }

  /** The HTTP server's `upgrade` handler. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? "/", "ws://gateway.invalid");
    if (this.refusing || url.pathname !== "/") {
      const refused = this.refusing;
      if (refused) this.refusedUpgrades += 1;
      const body = JSON.stringify(
        refused ? { message: "503: Service Unavailable", code: 0 } : { message: "404: Not Found" },
      );
      socket.end(
        `HTTP/1.1 ${refused ? "503 Service Unavailable" : "404 Not Found"}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
          `Connection: close\r\n\r\n${body}`,
      );
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => this.open(ws, url.searchParams));
  }

  /** While on, new upgrades are answered HTTP 503, holding clients disconnected. */
  refuse(on: boolean): void {
    this.refusing = on;
  }

  /**
   * Sends a dispatch to every session, built per session (undefined skips it).
   * A session whose socket is gone keeps the dispatch for its RESUME.
   */
  dispatch(t: string, build: (session: SessionView) => unknown): void {
    for (const session of this.sessions.values()) {
      const d = build(session);
      if (d !== undefined) this.sendDispatch(session, t, d);
    }
  }

  /** Closes every socket: abruptly (like a network drop, 1006) without a code, else with it. */
  dropConnections(code?: number): void {
    for (const ws of this.connections.keys()) {
      if (code === undefined) {
        this.markClosedByServer(ws);
        ws.terminate();
      } else {
        this.shut(ws, code, "");
      }
    }
  }

  /** Sends a raw text frame to every open socket. */
  sendRaw(text: string): void {
    for (const ws of this.connections.keys()) {
      if (ws.readyState === WebSocket.OPEN) ws.send(text);
    }
  }

  /** op 7 RECONNECT to every socket: Discord's request that the client reconnect and resume. */
  requestReconnect(): void {
    this.sendRaw(JSON.stringify({ op: GatewayOpcodes.Reconnect, d: null, s: null, t: null }));
  }

  /** op 9 INVALID_SESSION to every socket; a non-resumable one is forgotten, as Discord does. */
  invalidate(resumable: boolean): void {
    this.sendRaw(
      JSON.stringify({ op: GatewayOpcodes.InvalidSession, d: resumable, s: null, t: null }),
    );
    if (!resumable) this.sessions.clear();
  }

  async close(): Promise<void> {
    for (const ws of this.connections.keys()) {
      this.markClosedByServer(ws);
      ws.terminate();
    }
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }

  private open(ws: WebSocket, query: URLSearchParams): void {
    this.connections.set(ws, { session: undefined, closedByServer: false });
    this.queries.push(query.toString());
    ws.on("message", (data, isBinary) => this.receive(ws, data, isBinary));
    ws.on("close", (code) => this.closed(ws, code));
    if (query.get("v") !== "10") {
      this.shut(ws, GatewayCloseCodes.InvalidAPIVersion, "Invalid API version");
      return;
    }
    // Discord also speaks etf and zlib-stream; this double speaks only what roster asks for, and
    // says so rather than answering in a format the client didn't request.
    if (query.get("encoding") !== "json" || query.has("compress")) {
      this.shut(ws, 1003, "stand-in speaks encoding=json without compress only");
      return;
    }
    this.send(ws, {
      op: GatewayOpcodes.Hello,
      d: { heartbeat_interval: this.options.heartbeatInterval },
      s: null,
      t: null,
    });
  }

  private receive(ws: WebSocket, data: RawData, isBinary: boolean): void {
    const connection = this.connections.get(ws);
    if (!connection) return;
    let payload: unknown;
    try {
      if (isBinary) throw new Error("binary frame on a json connection");
      payload = JSON.parse(String(data));
    } catch {
      this.shut(ws, GatewayCloseCodes.DecodeError, "Error while decoding payload.");
      return;
    }
    if (!isRecord(payload) || typeof payload.op !== "number") {
      this.shut(ws, GatewayCloseCodes.DecodeError, "Error while decoding payload.");
      return;
    }
    const { op, d } = payload;
    if (op === GatewayOpcodes.Heartbeat) {
      this.heartbeats += 1;
      this.send(ws, { op: GatewayOpcodes.HeartbeatAck, d: null, s: null, t: null });
      return;
    }
    if (op === GatewayOpcodes.Identify || op === GatewayOpcodes.Resume) {
      if (connection.session) {
        this.shut(ws, GatewayCloseCodes.AlreadyAuthenticated, "Already authenticated.");
      } else if (!isRecord(d)) {
        this.shut(ws, GatewayCloseCodes.DecodeError, "Error while decoding payload.");
      } else if (d.token !== this.options.token) {
        this.shut(ws, GatewayCloseCodes.AuthenticationFailed, "Authentication failed.");
      } else if (op === GatewayOpcodes.Identify) {
        this.identify(ws, connection, d);
      } else {
        this.resume(ws, connection, d);
      }
      return;
    }
    if (!ACCEPTED_OPS.has(op)) {
      this.shut(ws, GatewayCloseCodes.UnknownOpcode, "Unknown opcode.");
    } else if (!connection.session) {
      this.shut(ws, GatewayCloseCodes.NotAuthenticated, "Not authenticated.");
    }
  }

  private identify(ws: WebSocket, connection: Connection, d: Record<string, unknown>): void {
    this.identifyPayloads.push(d);
    if (!isRecord(d.properties)) {
      this.shut(ws, GatewayCloseCodes.DecodeError, "Error while decoding payload.");
      return;
    }
    const { intents, shard } = d;
    if (typeof intents !== "number" || !Number.isInteger(intents) || intents < 0) {
      this.shut(ws, GatewayCloseCodes.InvalidIntents, "Invalid intent(s).");
      return;
    }
    // GET /gateway/bot recommends one shard, so [0, 1] is the only shard there is.
    if (shard !== undefined && !(Array.isArray(shard) && shard[0] === 0 && shard[1] === 1)) {
      this.shut(ws, GatewayCloseCodes.InvalidShard, "Invalid shard.");
      return;
    }
    const session: Session = {
      id: randomBytes(16).toString("hex"),
      intents,
      seq: 0,
      sent: [],
      socket: ws,
    };
    this.sessions.set(session.id, session);
    connection.session = session;
    this.identifies += 1;
    const ready: GatewayReadyDispatchData = {
      v: 10,
      user: this.options.botUser,
      guilds: this.options.guilds.map((id) => ({ id, unavailable: true })),
      session_id: session.id,
      resume_gateway_url: this.options.url(),
      shard: [0, 1],
      // Discord sends 0 when no application flag is set; the enum has no member for it.
      application: { id: this.options.applicationId, flags: 0 as ApplicationFlags, flags_new: "0" },
    };
    this.sendDispatch(session, GatewayDispatchEvents.Ready, ready);
  }

  private resume(ws: WebSocket, connection: Connection, d: Record<string, unknown>): void {
    const session = typeof d.session_id === "string" ? this.sessions.get(d.session_id) : undefined;
    if (!session) {
      this.invalidSessions += 1;
      this.send(ws, { op: GatewayOpcodes.InvalidSession, d: false, s: null, t: null });
      return;
    }
    const seq = typeof d.seq === "number" ? d.seq : -1;
    if (seq < 0 || seq > session.seq) {
      this.shut(ws, GatewayCloseCodes.InvalidSeq, "Invalid seq.");
      return;
    }
    // Discord closes a session's previous socket when another one resumes it.
    if (session.socket && session.socket !== ws) {
      this.markClosedByServer(session.socket);
      session.socket.terminate();
    }
    session.socket = ws;
    connection.session = session;
    for (const missed of session.sent.filter((dispatch) => dispatch.s > seq)) this.send(ws, missed);
    this.resumes += 1;
    this.sendDispatch(session, GatewayDispatchEvents.Resumed, {
      _trace: ['["gateway-stand-in",{"micros":0}]'],
    });
  }

  private sendDispatch(session: Session, t: string, d: unknown): void {
    session.seq += 1;
    const dispatch = { op: GatewayOpcodes.Dispatch, s: session.seq, t, d } as const;
    session.sent.push(dispatch);
    if (session.socket?.readyState === WebSocket.OPEN) this.send(session.socket, dispatch);
  }

  private send(ws: WebSocket, payload: unknown): void {
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(payload));
  }

  /** Closes a socket from Discord's side with a close code (and reason, as Discord sends one). */
  private shut(ws: WebSocket, code: number, reason: string): void {
    this.markClosedByServer(ws);
    ws.close(code, reason);
  }

  /** Detaches a socket the stand-in is closing, so dispatches queue for a resume at once. */
  private markClosedByServer(ws: WebSocket): void {
    const connection = this.connections.get(ws);
    if (!connection) return;
    connection.closedByServer = true;
    if (connection.session?.socket === ws) connection.session.socket = undefined;
  }

  private closed(ws: WebSocket, code: number): void {
    const connection = this.connections.get(ws);
    this.connections.delete(ws);
    if (!connection) return;
    this.closes.push({ code, by: connection.closedByServer ? "server" : "client" });
    const session = connection.session;
    // A socket another one has since resumed from no longer speaks for the session.
    if (session?.socket !== ws) return;
    session.socket = undefined;
    // A client closing with 1000 or 1001 ends its session on Discord; any other code (the
    // client's 4200 included) or a dropped socket leaves it resumable.
    if (code === 1000 || code === 1001) this.sessions.delete(session.id);
  }
}
